import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage, launchChromium, signInOnPage } from '../helpers/browser.ts';
import { registerClient } from '../helpers/oauth.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { signIn, type Client } from '../helpers/http.ts';

// /admin/dashboard in headless Chromium: owners and admins land there after signing in, members on the portal's
// dashboard; it shows the organization's counts, the platform's for platform admins, the last audit entries, and a
// "Getting started" checklist that ticks itself off from what the organization has.

const screenshots = new URL('../.tmp/', import.meta.url);

let server: TestServer;
let browser: Browser;
/** The platform admin's REST client: ADMIN owns the operator organization, its current one. */
let admin: Client;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    tenant = await createTenant(server.url, admin, 'Acme Corp');
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

/** A fresh page signed in through the form with no return_to, once the browser is where sign-in sent it. */
async function signInTo(person: { email: string; password: string }, landing: string): Promise<Page> {
  const page = await freshPage(browser, server.url);
  await page.goto('/login');
  await signInOnPage(page, person.email, person.password);
  await page.waitForURL((url) => url.pathname === landing);
  return page;
}

const count = (page: Page, name: string) => page.getByTestId(`count-${name}`).innerText();
const step = (page: Page, key: string) => page.locator(`[data-testid="step"][data-step="${key}"]`);

describe('admin dashboard', () => {
  test('the platform admin lands on it and sees the counts, the platform, and what is left to set up', async () => {
    // when the platform admin signs in
    const page = await signInTo(ADMIN, '/admin/dashboard');

    // then the dashboard shows the operator organization's counts (only the admin is a member, nothing made yet)
    await expect(page.title()).resolves.toBe('Admin dashboard · Tessera');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Admin dashboard');
    await expect(count(page, 'members')).resolves.toBe('1');
    await expect(count(page, 'subscriptions')).resolves.toBe('0');
    await expect(count(page, 'seats')).resolves.toBe('0 of 0');
    await expect(count(page, 'clients')).resolves.toBe('0');
    await expect(count(page, 'failing-webhooks')).resolves.toBe('0 of 0');
    // and the platform's: two organizations, the admin and the tenant's three people, no product
    await expect(page.getByRole('heading', { name: 'Platform' }).count()).resolves.toBe(1);
    await expect(count(page, 'organizations')).resolves.toBe('2');
    await expect(count(page, 'users')).resolves.toBe('4');
    await expect(count(page, 'products')).resolves.toBe('0');

    // and every first step is left, each a link to the page that does it
    const steps = page.getByTestId('step');
    await expect(steps.evaluateAll((items) => items.map((li) => [li.dataset.step, li.dataset.done]))).resolves.toEqual([
      ['product', 'false'],
      ['oauthClient', 'false'],
      ['webhook', 'false'],
      ['invitation', 'false'],
    ]);
    const hrefs = await steps.getByRole('link').evaluateAll((links) => links.map((a) => a.getAttribute('href')));
    expect(hrefs).toEqual(['/admin/products', '/admin/clients', '/admin/settings/webhooks', '/admin/settings/members']);

    // and the latest audit entries (the sign-in among them) link to the audit log
    const recent = page.getByTestId('recent-entry');
    expect(await recent.count()).toBeGreaterThan(0);
    expect(await recent.count()).toBeLessThanOrEqual(5);
    await expect(
      page.locator('[data-testid="recent-entry"][data-action="auth.login"]').count(),
    ).resolves.toBeGreaterThan(0);
    await expect(page.getByRole('link', { name: 'All audit logs' }).getAttribute('href')).resolves.toBe(
      '/admin/audit-logs',
    );
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('admin-dashboard.png', screenshots).pathname, fullPage: true });

    // when an OAuth client is registered over REST and the page is reloaded
    await registerClient(admin, {
      name: 'Dashboard app',
      redirect_uris: ['https://dashboard.example.com/cb'],
      allowed_scopes: ['openid'],
    });
    await page.reload();

    // then its step is ticked, with no link left, the count moved, and the registration is the newest entry
    await expect(step(page, 'oauthClient').getAttribute('data-done')).resolves.toBe('true');
    await expect(step(page, 'oauthClient').getByRole('link').count()).resolves.toBe(0);
    await expect(step(page, 'oauthClient').textContent()).resolves.toContain('(done)');
    await expect(step(page, 'webhook').getAttribute('data-done')).resolves.toBe('false');
    await expect(count(page, 'clients')).resolves.toBe('1');
    await expect(recent.first().getAttribute('data-action')).resolves.toBe('oauth_client.create');
    await page.context().close();
  });

  test("a tenant's admin lands on it with the tenant's counts, and no platform counts or product step", async () => {
    // when the tenant's admin signs in
    const page = await signInTo({ email: tenant.admin.email, password: PASSWORD }, '/admin/dashboard');

    // then the dashboard is the tenant's: its three people, the invitation step done by them
    await expect(page.locator('main').textContent()).resolves.toContain('Acme Corp');
    await expect(count(page, 'members')).resolves.toBe('3');
    await expect(count(page, 'clients')).resolves.toBe('0');
    await expect(page.getByRole('heading', { name: 'Platform' }).count()).resolves.toBe(0);
    await expect(page.getByTestId('count-organizations').count()).resolves.toBe(0);
    await expect(
      page.getByTestId('step').evaluateAll((items) => items.map((li) => [li.dataset.step, li.dataset.done])),
    ).resolves.toEqual([
      ['oauthClient', 'false'],
      ['webhook', 'false'],
      ['invitation', 'true'],
    ]);
    await page.context().close();
  });

  test('a member lands on the portal dashboard, and the admin dashboard is refused', async () => {
    // when the tenant's member signs in
    const page = await signInTo({ email: tenant.member.email, password: PASSWORD }, '/portal/dashboard');

    // then they are on their own dashboard
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Dashboard');
    await expect(page.getByTestId('user-email').textContent()).resolves.toBe(tenant.member.email);

    // and the admin dashboard is not theirs
    const response = await page.goto('/admin/dashboard');
    expect(response?.status()).toBe(403);
    await page.context().close();
  });
});
