import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { BROWSER_WAIT_MS, continueWithEmail, freshPage, launchChromium, signedInPage } from '../helpers/browser.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { client, signIn, type Client } from '../helpers/http.ts';

// /admin/settings/api-keys: an organization's admins create, list and revoke API keys in headless Chromium; the REST
// API, called with the key and the secret the page showed, confirms what the page did.

const screenshots = new URL('../.tmp/', import.meta.url);

let server: TestServer;
let browser: Browser;
/** The platform admin's REST client: ADMIN owns the operator organization, its current one. */
let admin: Client;
let me: { id: string; name: string; email: string };
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    me = (await admin.get('/api/v1/users/me')).body;
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

/** A REST client that authenticates with an API key: the key as the Bearer value, the secret as X-API-Secret. */
const withKey = (key: string, secret: string) => client(server.url, { apiKey: { key, secret } });

/**
 * Submits the page's form with button `name` and waits until the page shows the action's answer: its buttons are
 * disabled while a form is sent, and enabled again once the answer (and the reloaded data) is on the page.
 */
async function submit(page: Page, name: string): Promise<void> {
  const path = new URL(page.url()).pathname;
  await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
    page.getByRole('button', { name, exact: true }).click(),
  ]);
  await page.waitForFunction(() => !document.querySelector('main button[disabled]'));
}

const row = (page: Page, id: string) => page.locator(`[data-testid="api-key-row"][data-key-id="${id}"]`);

describe('admin: API keys', () => {
  test('creating a key shows the key and the secret once, with copy buttons, and they authenticate a REST call', async () => {
    // given the operator organization's owner, who opens API keys from the navigation
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await page.goto('/admin/dashboard');
    const nav = page.getByRole('navigation', { name: 'Administration' });
    await nav.getByRole('list', { name: 'Settings' }).getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/settings/api-keys');
    await expect(page.title()).resolves.toBe('API keys · Tessera');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('API keys');
    await expect(nav.getByRole('link', { name: 'API keys' }).getAttribute('aria-current')).resolves.toBe('page');

    // when they create an admin key
    await page.getByLabel('Name', { exact: true }).fill('Billing sync');
    await page.getByLabel('Role', { exact: true }).selectOption('admin');
    await submit(page, 'Create key');

    // then the key and the secret are shown, with the warning, and the focus is on them
    const box = page.getByTestId('api-key-secret-box');
    await box.waitFor();
    await expect(box.textContent()).resolves.toContain(
      'Save the key and the secret now: they will not be shown again.',
    );
    const key = (await box.getByTestId('shown-api-key').textContent())!;
    const secret = (await box.getByTestId('shown-api-secret').textContent())!;
    expect(key).toMatch(/^tsk_/);
    expect(secret).toMatch(/^tsks_/);
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('secret-heading');
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('admin-api-keys.png', screenshots).pathname, fullPage: true });

    // and each copy button puts its value on the clipboard
    await box.getByRole('button', { name: 'Copy key' }).click();
    await box.getByText('Copied').waitFor();
    await expect(page.evaluate(() => navigator.clipboard.readText())).resolves.toBe(key);
    await box.getByRole('button', { name: 'Copy secret' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    // and the form is ready for the next key
    await expect(page.getByLabel('Name', { exact: true }).inputValue()).resolves.toBe('');

    // and the key with its secret authenticates a real REST call, as an admin of the organization
    const listed = await withKey(key, secret).get('/api/v1/api-keys');
    expect(listed.status).toBe(200);
    const stored = listed.body.api_keys.find((k: { name: string }) => k.name === 'Billing sync');
    expect(stored).toMatchObject({ role: 'admin', created_by: me.id, key_prefix: `${key.slice(0, 10)}…` });
    // while the key without its secret does not
    expect((await withKey(key, `${secret}x`).get('/api/v1/api-keys')).status).toBe(401);

    // when the page is reloaded
    await page.reload();

    // then neither the key nor the secret is shown again, and the list has the key by its prefix, role, creator and last use
    await expect(page.getByTestId('api-key-secret-box').count()).resolves.toBe(0);
    const html = await page.content();
    expect(html).not.toContain(secret);
    expect(html).not.toContain(key);
    const listedRow = row(page, stored.id);
    await expect(listedRow.getByRole('rowheader').textContent()).resolves.toBe('Billing sync');
    await expect(listedRow.getByTestId('key-prefix').textContent()).resolves.toBe(`${key.slice(0, 10)}…`);
    await expect(listedRow.getByRole('cell').nth(1).textContent()).resolves.toBe('admin');
    const creator = (await listedRow.getByTestId('key-creator').textContent())!;
    expect(creator).toContain(me.name);
    expect(creator).toContain(me.email);
    // the REST call above was its last use
    await expect(listedRow.getByTestId('key-last-used').textContent()).resolves.toMatch(
      /^\s*\d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC\s*$/,
    );
    await page.context().close();
  });

  test('a name of spaces is refused under its field, what was typed stays, and no key is made', async () => {
    // given the API keys page
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/api-keys');
    const before = (await admin.get('/api/v1/api-keys')).body.api_keys.length;

    // when a blank name is submitted as a member key
    await page.getByLabel('Name', { exact: true }).fill('   ');
    await page.getByLabel('Role', { exact: true }).selectOption('member');
    await submit(page, 'Create key');

    // then the form says what is wrong, tied to the field, and keeps the role chosen
    await expect(page.getByRole('alert').textContent()).resolves.toContain('The key was not created');
    const name = page.getByLabel('Name', { exact: true });
    await expect.poll(() => name.getAttribute('aria-invalid')).toBe('true');
    await expect(page.locator('#key-name-error').textContent()).resolves.toBe('Name must not be empty');
    await expect(page.getByLabel('Role', { exact: true }).inputValue()).resolves.toBe('member');
    await expect(page.getByTestId('api-key-secret-box').count()).resolves.toBe(0);
    expect((await admin.get('/api/v1/api-keys')).body.api_keys.length).toBe(before);
    await page.context().close();
  });

  test('Revoke asks for confirmation, and the revoked key then answers 401', async () => {
    // given a key that works
    const created = await admin.post('/api/v1/api-keys', { name: 'Old importer', role: 'member' });
    expect(created.status).toBe(201);
    const { id, key, secret } = created.body;
    expect((await withKey(key, secret).get('/api/v1/orgs')).status).toBe(200);
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/api-keys');

    // when Revoke is chosen in its row, then cancelled
    await row(page, id).getByRole('link', { name: 'Revoke Old importer' }).click();
    const question = page.getByRole('heading', { name: 'Revoke “Old importer”?' });
    await question.waitFor();
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('revoke-heading');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL((url) => url.search === '');

    // then nothing happened
    await expect(question.count()).resolves.toBe(0);
    expect((await withKey(key, secret).get('/api/v1/orgs')).status).toBe(200);

    // and the action itself insists on the confirmation
    const unconfirmed = await page.request.post('/admin/settings/api-keys?/revoke', {
      form: { id },
      headers: { origin: server.url, accept: 'application/json' },
    });
    expect(JSON.parse(await unconfirmed.text())).toMatchObject({ type: 'failure', status: 400 });
    expect((await withKey(key, secret).get('/api/v1/orgs')).status).toBe(200);

    // when Revoke is chosen again and confirmed
    await row(page, id).getByRole('link', { name: 'Revoke Old importer' }).click();
    await question.waitFor();
    await submit(page, 'Revoke key');

    // then the page says so, the key is no longer listed, and it answers 401
    await expect(page.getByRole('status').textContent()).resolves.toContain('The key “Old importer” was revoked');
    await expect(row(page, id).count()).resolves.toBe(0);
    await expect(question.count()).resolves.toBe(0);
    const refused = await withKey(key, secret).get('/api/v1/orgs');
    expect(refused.status).toBe(401);
    expect((await admin.get('/api/v1/api-keys')).body.api_keys.map((k: { id: string }) => k.id)).not.toContain(id);

    // and revoking it again says it is gone, on the page
    const again = await page.request.post('/admin/settings/api-keys?/revoke', {
      form: { id, confirm: 'yes' },
      headers: { origin: server.url },
    });
    expect(again.status()).toBe(404);
    expect(await again.text()).toContain('No such API key in this organization.');
    await page.context().close();
  });

  test('without JavaScript, create and revoke still work as plain form posts', async () => {
    // given the page in a browser that runs no script
    const context = await browser.newContext({ baseURL: server.url, javaScriptEnabled: false });
    context.setDefaultTimeout(BROWSER_WAIT_MS);
    const page = await context.newPage();
    await page.goto('/login');
    await continueWithEmail(page, ADMIN.email);
    await page.getByLabel('Password').fill(ADMIN.password);
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/admin/dashboard'),
      page.getByRole('button', { name: 'Sign in', exact: true }).click(),
    ]);
    await page.goto('/admin/settings/api-keys');

    // when a key is created
    await page.getByLabel('Name', { exact: true }).fill('No script');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Create key' }).click()]);

    // then the key and the secret are shown (no copy buttons without script) and they work
    const box = page.getByTestId('api-key-secret-box');
    const key = (await box.getByTestId('shown-api-key').textContent())!;
    const secret = (await box.getByTestId('shown-api-secret').textContent())!;
    await expect(box.getByRole('button').count()).resolves.toBe(0);
    expect((await withKey(key, secret).get('/api/v1/orgs')).status).toBe(200);

    // when it is revoked through the confirmation page
    const { id } = (await admin.get('/api/v1/api-keys')).body.api_keys.find(
      (k: { name: string }) => k.name === 'No script',
    );
    await page.goto('/admin/settings/api-keys');
    await row(page, id).getByRole('link', { name: 'Revoke No script' }).click();
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Revoke key' }).click()]);

    // then it is gone and refused
    await expect(page.getByRole('status').textContent()).resolves.toContain('The key “No script” was revoked');
    expect((await withKey(key, secret).get('/api/v1/orgs')).status).toBe(401);
    await context.close();
  });

  test("another organization's key is neither listed nor revoked here, even by a platform admin", async () => {
    // given a key of the tenant, made by the tenant's admin
    const created = await tenant.admin.api.post('/api/v1/api-keys', { name: 'Tenant sync', role: 'member' });
    expect(created.status).toBe(201);
    const { id, key, secret } = created.body;

    // when the platform admin, acting in the operator organization, opens the page and posts its revocation
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/api-keys');
    await expect(row(page, id).count()).resolves.toBe(0);
    const posted = await page.request.post('/admin/settings/api-keys?/revoke', {
      form: { id, confirm: 'yes' },
      headers: { origin: server.url },
    });

    // then it is not found, and the key still works
    expect(posted.status()).toBe(404);
    expect((await withKey(key, secret).get('/api/v1/orgs')).status).toBe(200);
    await page.context().close();

    // while the tenant's admin sees it, by their name
    const theirs = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await theirs.goto('/admin/settings/api-keys');
    await expect(theirs.getByTestId('api-key-row').count()).resolves.toBe(1);
    await expect(row(theirs, id).getByTestId('key-creator').textContent()).resolves.toContain(tenant.admin.email);
    await theirs.context().close();
  });

  test('a member of the organization is refused, page and actions alike', async () => {
    // given the tenant's member, signed in
    const page = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });

    // when they open the page, then access is denied
    const response = await page.goto('/admin/settings/api-keys');
    expect(response?.status()).toBe(403);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Access denied');

    // and posting the form directly creates nothing
    const posted = await page.request.post('/admin/settings/api-keys?/create', {
      form: { name: 'Sneaky', role: 'member' },
      headers: { origin: server.url },
    });
    expect(posted.status()).toBe(403);
    const keys = (await tenant.admin.api.get('/api/v1/api-keys')).body.api_keys.map((k: { name: string }) => k.name);
    expect(keys).not.toContain('Sneaky');
    await page.context().close();
  });

  test('a signed-out visitor is sent to sign in and back', async () => {
    const page = await freshPage(browser, server.url);
    await page.goto('/admin/settings/api-keys');
    const login = new URL(page.url());
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toBe('/admin/settings/api-keys');
    await page.context().close();
  });
});
