import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { launchChromium, signedInPage } from '../helpers/browser.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { signIn, type Client } from '../helpers/http.ts';

// Organizations in the portal, in headless Chromium: the platform admin's /admin/organizations (create, search,
// rename, members and subscriptions of one), the header's switcher for people in several organizations, an owner's
// transfer of ownership on /admin/settings, and a seat given in another organization's subscription. REST confirms
// what the pages did.

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

/** Goes to `path` and waits for the page's scripts, so that what is typed next is not lost to a reload. */
async function open(page: Page, path: string): Promise<Page> {
  await page.goto(path);
  await page.waitForLoadState('networkidle');
  return page;
}

/** Clicks `button` in `scope` and waits for the action's answer. */
async function submit(page: Page, scope: Locator, button: string) {
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST'),
    scope.getByRole('button', { name: button }).click(),
  ]);
  await page.waitForLoadState('networkidle');
}

const rolesOf = async (organizationId: string) =>
  Object.fromEntries(
    (await admin.get(`/v1/organizations/${organizationId}/members`)).body.members.map(
      (m: { user_id: string; role: string }) => [m.user_id, m.role],
    ),
  );

describe('/admin/organizations', () => {
  test('a platform admin creates an organization, finds it by name, renames it and sees its members', async () => {
    const name = `Zephyr ${randomBytes(3).toString('hex')}`;
    const page = await open(await signedInPage(browser, server.url, ADMIN), '/admin/organizations');
    // The navigation leads here, for platform admins.
    expect(
      await page
        .getByRole('navigation', { name: 'Administration' })
        .getByRole('link', { name: 'Organizations' })
        .getAttribute('aria-current'),
    ).toBe('page');

    // Created, with the admin as its owner.
    const create = page.locator('form[action="?/create"]');
    await create.getByLabel('Name').fill(name);
    await submit(page, create, 'Create organization');
    await page
      .getByRole('status')
      .filter({ hasText: `Organization ${name} created` })
      .waitFor();
    const created = (await admin.get(`/v1/organizations?search=${encodeURIComponent(name)}`)).body.organizations;
    expect(created).toHaveLength(1);
    const id = created[0].id;

    // Found by a part of its name in another case; the tenant is not listed then.
    await page.getByLabel('Name contains').fill(name.slice(0, 6).toLowerCase());
    await Promise.all([
      page.waitForURL((url) => url.searchParams.get('search') === name.slice(0, 6).toLowerCase()),
      page.getByRole('button', { name: 'Search' }).click(),
    ]);
    const rows = page.locator('[data-testid="organization-row"]');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(1);
    expect(await rows.first().getAttribute('data-id')).toBe(id);
    expect(await page.getByText(tenant.name).count()).toBe(0);

    // Renamed in place.
    const row = page.locator(`[data-testid="organization-row"][data-id="${id}"]`);
    await row.getByText('Rename').click();
    const rename = row.locator('form[action="?/rename"]');
    await rename.getByLabel('New name').fill(`${name} Labs`);
    await submit(page, rename, 'Save name');
    await page
      .getByRole('status')
      .filter({ hasText: `Renamed to ${name} Labs.` })
      .waitFor();
    expect((await admin.get(`/v1/organizations/${id}`)).body.name).toBe(`${name} Labs`);

    // Its page: the id to copy, and the admin as its one member.
    await Promise.all([
      page.waitForURL(`**/admin/organizations/${id}`),
      page.getByRole('link', { name: `${name} Labs`, exact: true }).click(),
    ]);
    expect(await page.getByTestId('organization-id').textContent()).toBe(id);
    await page.getByRole('button', { name: 'Copy organization ID' }).waitFor();
    const members = page.locator('[data-testid="member-row"]');
    expect(await members.count()).toBe(1);
    expect(await members.first().textContent()).toContain(ADMIN.email);
    expect(await page.getByRole('button', { name: `Switch to ${name} Labs` }).count()).toBe(1);

    // A tenant the admin is not in: its members and subscriptions, read-only.
    await open(page, `/admin/organizations/${tenant.id}`);
    const tenantMembers = page.locator('[data-testid="member-row"]');
    expect((await tenantMembers.allTextContents()).join(' ')).toContain(tenant.owner.email);
    expect(await tenantMembers.count()).toBe(3);
    await page.getByText('You are not a member of this organization').waitFor();
    expect(await page.getByRole('button', { name: /^Switch to/ }).count()).toBe(0);
  });

  test('is refused to an organization admin who is not a platform admin, and not in its navigation', async () => {
    const page = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    const reply = await page.goto('/admin/organizations');
    expect(reply?.status()).toBe(403);
    const detail = await page.goto(`/admin/organizations/${tenant.id}`);
    expect(detail?.status()).toBe(403);
    await open(page, '/admin/settings');
    expect(await page.getByRole('link', { name: 'Organizations' }).count()).toBe(0);
  });
});

describe('the header switcher', () => {
  test('an owner of two organizations switches, and the page shows the other one; it fits 375 px', async () => {
    const second = (
      await tenant.owner.api.post('/v1/organizations', { name: `Side ${randomBytes(3).toString('hex')}` })
    ).body;
    const page = await signedInPage(browser, server.url, { email: tenant.owner.email, password: PASSWORD });
    await page.setViewportSize({ width: 375, height: 740 });
    await open(page, '/admin/settings');
    expect(await page.getByTestId('organization-id').textContent()).toBe(tenant.id);

    const switcher = page.locator('form.switcher');
    const menu = switcher.getByLabel('Organization');
    expect(await menu.inputValue()).toBe(tenant.id);
    // Usable on a narrow screen: the menu and its button are on the screen, and the page does not scroll sideways.
    for (const part of [menu, switcher.getByRole('button', { name: 'Switch' })]) {
      const box = (await part.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(375);
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);

    await menu.selectOption({ label: second.name });
    await submit(page, switcher, 'Switch');
    // Back on the same page, now about the other organization.
    await page.waitForURL((url) => url.pathname === '/admin/settings');
    await page.getByRole('heading', { name: second.name }).waitFor();
    expect(await page.getByTestId('organization-id').textContent()).toBe(second.id);
    expect(await page.locator('.admin-nav .org').textContent()).toBe(second.name);
    expect(await switcher.getByLabel('Organization').inputValue()).toBe(second.id);
  });

  test('goes back only to a path of this site', async () => {
    const person = await signIn(server.url, tenant.owner.email, PASSWORD);
    const post = (returnTo: string) =>
      fetch(`${server.url}/switch-organization`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          accept: 'text/html',
          origin: server.url,
          cookie: `tessera_session=${person.login.token}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ organizationId: tenant.id, return_to: returnTo }).toString(),
      });
    for (const away of [
      'https://evil.example/admin/settings',
      '//evil.example/x',
      '/\\evil.example',
      'javascript:alert(1)',
    ]) {
      const reply = await post(away);
      expect(reply.status, away).toBe(303);
      expect(reply.headers.get('location'), away).toMatch(/^\/[^/\\]/);
    }
    // A record's page becomes its list: the id means nothing in the other organization.
    expect((await post('/admin/clients/0190abcd?x=1')).headers.get('location')).toBe('/admin/clients');
    expect((await post('/admin/settings/webhooks/0190abcd')).headers.get('location')).toBe('/admin/settings/webhooks');
    // Not a member: 404, and the session stays where it was.
    const other = await fetch(`${server.url}/switch-organization`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        accept: 'text/html',
        origin: server.url,
        cookie: `tessera_session=${person.login.token}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        organizationId: '01900000-0000-7000-8000-000000000000',
        return_to: '/admin/settings',
      }).toString(),
    });
    expect(other.status).toBe(404);
  });
});

describe('/admin/settings', () => {
  test('an owner renames the organization and transfers ownership, stepping down to admin', async () => {
    const t = await createTenant(server.url, admin);
    const page = await open(
      await signedInPage(browser, server.url, { email: t.owner.email, password: PASSWORD }),
      '/admin/settings',
    );

    const rename = page.locator('form[action="?/rename"]');
    await rename.getByLabel('Organization name').fill(`${t.name} Group`);
    await submit(page, rename, 'Rename');
    await page
      .getByRole('status')
      .filter({ hasText: `The organization is now called ${t.name} Group.` })
      .waitFor();
    expect((await admin.get(`/v1/organizations/${t.id}`)).body.name).toBe(`${t.name} Group`);

    const transfer = page.locator('form[action="?/transfer"]');
    await transfer.getByLabel('New owner').selectOption({ value: t.admin.id });
    expect(await transfer.getByLabel('Step down to admin once they are owner').isChecked()).toBe(true);
    await transfer.getByLabel('Yes, transfer ownership').check();
    await submit(page, transfer, 'Transfer ownership');
    await page.getByRole('status').filter({ hasText: 'is now an owner, and you are an admin.' }).waitFor();
    expect(await rolesOf(t.id)).toEqual({ [t.owner.id]: 'admin', [t.admin.id]: 'owner', [t.member.id]: 'member' });

    // An admin now: the page offers no transfer any more.
    await open(page, '/admin/settings');
    expect(await page.locator('form[action="?/transfer"]').count()).toBe(0);
    await page.getByTestId('organization-id').waitFor();
  });
});

describe('seats in another organization', () => {
  test('a platform admin gives a member of another organization a seat of its subscription', async () => {
    const product = (
      await admin.post('/v1/products', { name: 'Roomy', slug: `roomy-${randomBytes(3).toString('hex')}`, features: [] })
    ).body;
    const sub = (
      await admin.post('/v1/subscriptions', {
        organization_id: tenant.id,
        product_id: product.id,
        total_seats: 2,
        price_per_seat: 5,
        billing_cycle: 'monthly',
      })
    ).body;
    const page = await open(
      await signedInPage(browser, server.url, ADMIN),
      `/admin/subscriptions?organization=${tenant.id}`,
    );

    const row = page.locator(`[data-testid="subscription-row"][data-id="${sub.id}"]`);
    await Promise.all([
      page.waitForURL(`**/admin/subscriptions/${sub.id}`),
      row.getByRole('link', { name: 'Seats' }).click(),
    ]);
    await page.waitForLoadState('networkidle');
    expect(await page.getByTestId('subscription-id').textContent()).toBe(sub.id);

    const assign = page.locator('form[action="?/assign"]');
    await assign.getByLabel(`Member of ${tenant.name}`).selectOption({ label: tenant.member.email });
    await submit(page, assign, 'Assign seat');
    await page.getByRole('status').filter({ hasText: 'Seat assigned.' }).waitFor();
    await page.locator(`[data-testid="seat"][data-user-id="${tenant.member.id}"]`).waitFor();
    const seats = await admin.get(`/api/v1/subscriptions/${sub.id}/seats`);
    expect(seats.body.seats.map((s: { user_id: string }) => s.user_id)).toEqual([tenant.member.id]);

    // And frees it again.
    await submit(page, page.locator('[data-testid="seat"]'), `Free seat of ${tenant.member.email}`);
    await page.getByRole('status').filter({ hasText: 'Seat freed.' }).waitFor();
    expect((await admin.get(`/api/v1/subscriptions/${sub.id}/seats`)).body.seats).toEqual([]);
  });
});
