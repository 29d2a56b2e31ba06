import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { launchChromium, signedInPage } from '../helpers/browser.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { signIn, type Client } from '../helpers/http.ts';

// /admin/products, /admin/subscriptions and /portal/subscriptions in headless Chromium: the platform admin writes the
// catalog and subscriptions, a tenant's admin assigns seats, a member sees their organization's subscriptions; REST
// confirms what the pages did.

let server: TestServer;
let browser: Browser;
let admin: Client;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    tenant = await createTenant(server.url, admin);
  } catch (error) {
    await browser?.close();
    await server.stop();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/**
 * Goes to `path` and waits for the page's scripts: a choice made in a form before they ran would be lost if the page
 * had to load again (hooks.client.ts).
 */
async function open(page: Page, path: string): Promise<Page> {
  await page.goto(path);
  await page.waitForLoadState('networkidle');
  return page;
}

/** The platform admin's page on `path`: ADMIN's current organization is the operator one. */
async function adminPage(path: string): Promise<Page> {
  return open(await signedInPage(browser, server.url, ADMIN), path);
}

/** Clicks `button` in `scope` and waits for the action's answer. */
async function submit(page: Page, scope: ReturnType<Page['locator']>, button: string) {
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    scope.getByRole('button', { name: button }).click(),
  ]);
  await page.waitForLoadState('networkidle');
}

/** The texts of what describes `field` (aria-describedby), joined. */
const description = (field: ReturnType<Page['locator']>) =>
  field.evaluate((el) =>
    (el.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .filter(Boolean)
      .map((id) => document.getElementById(id)?.textContent?.trim() ?? '')
      .join(' '),
  );

describe('/admin/products', () => {
  test('a platform admin lists, creates, edits and deletes (with confirmation) products', async () => {
    const page = await adminPage('/admin/products');
    await page.getByRole('heading', { name: 'Products', level: 1 }).waitFor();
    const create = page.locator('form[action="?/create"]');
    await create.getByLabel('Name').fill('Browser product');
    await create.getByLabel('Slug').fill('browser-product');
    await create.getByLabel('Features (comma separated)').fill('export, share');
    await submit(page, create, 'Add product');
    await page.getByRole('status').filter({ hasText: 'Product browser-product created.' }).waitFor();
    const row = page.locator('[data-testid="product-row"][data-slug="browser-product"]');
    expect(await row.textContent()).toContain('export, share');

    await row.getByText('Edit').click();
    const edit = row.locator('form[action="?/update"]');
    await edit.getByLabel('Description').fill('Edited in the browser');
    await submit(page, edit, 'Save');
    await page.getByRole('status').filter({ hasText: 'saved' }).waitFor();
    expect((await admin.get('/v1/products/browser-product')).body.description).toBe('Edited in the browser');

    // The slug's rule is beside the field, and a slug the service refuses is said beside it too, in those words.
    const slug = create.getByLabel('Slug');
    await expect(description(slug)).resolves.toBe(
      '1 to 63 lowercase letters, digits and hyphens, starting with a letter or digit; not a standard OAuth scope (openid, profile, email, organization, api).',
    );
    await create.getByLabel('Name').fill('Reserved');
    await slug.fill('openid');
    await submit(page, create, 'Add product');
    await expect.poll(() => slug.getAttribute('aria-invalid')).toBe('true');
    await expect(description(slug)).resolves.toMatch(/^Slug is reserved \(a standard OAuth scope\) 1 to 63 lowercase/);
    expect((await admin.get('/v1/products/openid')).status).toBe(404);

    // A duplicate slug is refused with the service's message.
    await create.getByLabel('Name').fill('Again');
    await create.getByLabel('Slug').fill('browser-product');
    await submit(page, create, 'Add product');
    await page.getByRole('alert').filter({ hasText: 'already exists' }).waitFor();

    const current = page.locator('[data-testid="product-row"][data-slug="browser-product"]');
    await current.getByText('Delete', { exact: true }).click();
    const del = current.locator('form[action="?/delete"]');
    await del.getByLabel('Yes, delete Browser product').check();
    await submit(page, del, 'Delete product');
    await page.getByRole('status').filter({ hasText: 'deleted' }).waitFor();
    expect((await admin.get('/v1/products/browser-product')).status).toBe(404);
  });

  test("a tenant's admin reads the catalog without write forms", async () => {
    await admin.post('/v1/products', { name: 'Readable', slug: 'readable' });
    const page = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await page.goto('/admin/products');
    await page.locator('[data-testid="product-row"][data-slug="readable"]').waitFor();
    expect(await page.locator('form[action="?/create"]').count()).toBe(0);
  });
});

describe('/admin/subscriptions and /portal/subscriptions', () => {
  test('a platform admin creates, filters, changes and cancels; the tenant admin assigns a seat; the member sees it', async () => {
    const product = (await admin.post('/v1/products', { name: 'Seated', slug: 'seated', features: ['x'] })).body;
    const page = await adminPage('/admin/subscriptions');
    const create = page.locator('form[action="?/create"]');
    await create.getByLabel('Organization').selectOption({ label: tenant.name });
    await create.getByLabel('Product').selectOption(product.id);
    await create.getByLabel('Seats').fill('3');
    await create.getByLabel('Price per seat').fill('19.99');
    await create.getByLabel('Billing cycle').selectOption('yearly');
    await create.getByLabel('Status').selectOption('trial');
    await create.getByLabel('End date').fill('2030-06-30');
    await submit(page, create, 'Create subscription');
    await page.getByRole('status').filter({ hasText: 'Subscription created.' }).waitFor();
    const listed = await admin.get(`/v1/subscriptions?organization_id=${tenant.id}&product_id=${product.id}`);
    const sub = listed.body.subscriptions[0];
    expect(sub).toMatchObject({
      total_seats: 3,
      price_per_seat: 19.99,
      billing_cycle: 'yearly',
      status: 'trial',
      end_date: '2030-06-30T00:00:00.000Z',
    });

    await open(page, `/admin/subscriptions?organization=${tenant.id}&status=trial`);
    const row = page.locator(`[data-testid="subscription-row"][data-id="${sub.id}"]`);
    await row.waitFor();
    await row.getByText('Change').click();
    const change = row.locator('form[action="?/update"]');
    // A refused price is named as the form labels it, not by the API's field name.
    await change.getByLabel('Price per seat').fill('19.999');
    await submit(page, change, 'Save');
    const refusal = (await page.getByRole('alert').textContent())!;
    expect(refusal).toContain('Price per seat: must be a non-negative amount with at most 2 decimals');
    expect(refusal).not.toContain('pricePerSeat');
    await change.getByLabel('Price per seat').fill('19.99');
    // The change form saves, and nothing beside Save cancels the subscription.
    await expect(row.getByRole('button', { name: /cancel/i }).count()).resolves.toBe(0);
    await change.getByLabel('Seats').fill('5');
    await change.getByLabel('Status').selectOption('active');
    await submit(page, change, 'Save');
    await page.getByRole('status').filter({ hasText: 'Subscription saved.' }).waitFor();
    expect((await admin.get(`/v1/subscriptions/${sub.id}`)).body).toMatchObject({
      total_seats: 5,
      status: 'active',
      price_per_seat: 19.99,
    });

    // The tenant's admin sees only its organization's subscriptions, and gives the member a seat.
    const tenantPage = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await open(tenantPage, '/admin/subscriptions');
    const theirs = tenantPage.locator(`[data-testid="subscription-row"][data-id="${sub.id}"]`);
    await theirs.getByText('Seats', { exact: true }).click();
    const assign = theirs.locator('form[action="?/assign"]');
    await assign.getByLabel('Member').selectOption({ label: tenant.member.email });
    await submit(tenantPage, assign, 'Assign seat');
    await tenantPage.getByRole('status').filter({ hasText: 'Seat assigned.' }).waitFor();
    expect(await tenantPage.locator('form[action="?/create"]').count()).toBe(0);
    const seats = await tenant.admin.api.get(`/api/v1/subscriptions/${sub.id}/seats`);
    expect(seats.body.seats.map((s: { user_id: string }) => s.user_id)).toEqual([tenant.member.id]);

    // The member's portal page: product, seats, cycle, status, expiry, and the license it gives.
    const memberPage = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });
    await memberPage.goto('/portal/subscriptions');
    const mine = memberPage.locator('[data-testid="subscription-row"]').filter({ hasText: 'Seated' });
    const text = await mine.textContent();
    expect(text).toContain('1 of 5 assigned');
    expect(text).toContain('yearly');
    expect(text).toContain('active');
    expect(text).toContain('30 Jun 2030');
    expect(text).toContain('Licensed');

    // Cancelling is apart, in its own section of the subscription's page, and needs the confirmation box: the action
    // refuses a post without it, and the record stays, cancelled.
    const unconfirmed = await page.request.post(`/admin/subscriptions/${sub.id}?/cancel`, {
      form: { id: sub.id },
      headers: { origin: server.url, accept: 'application/json' },
    });
    expect(unconfirmed.status()).toBe(400);
    expect(await unconfirmed.text()).toContain('tick the box to confirm the cancellation');
    expect((await admin.get(`/v1/subscriptions/${sub.id}`)).body.status).toBe('active');
    await open(page, `/admin/subscriptions/${sub.id}`);
    const danger = page.getByRole('region', { name: 'Cancel the subscription' });
    await expect(danger.getAttribute('class')).resolves.toContain('danger-zone');
    const cancel = danger.locator('form[action="?/cancel"]');
    await cancel.getByLabel(`Yes, cancel Seated for ${tenant.name}`).check();
    await submit(page, cancel, 'Cancel subscription');
    await page.getByRole('status').filter({ hasText: 'Subscription cancelled' }).waitFor();
    expect((await admin.get(`/v1/subscriptions/${sub.id}`)).body.status).toBe('cancelled');
    await expect(page.getByRole('region', { name: 'Cancel the subscription' }).count()).resolves.toBe(0);
  });
});
