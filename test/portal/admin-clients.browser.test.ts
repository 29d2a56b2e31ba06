import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage, launchChromium, signedInPage } from '../helpers/browser.ts';
import { registerClient, tokenRequest, type RegisteredClient } from '../helpers/oauth.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { signIn, type Client } from '../helpers/http.ts';

// /admin/clients and /admin/clients/[id]: an organization's admins register, edit, disable, rotate and delete their
// OAuth clients in headless Chromium; REST and the token endpoint confirm what the pages did.

const screenshots = new URL('../.tmp/', import.meta.url);

let server: TestServer;
let browser: Browser;
/** The platform admin's REST client: ADMIN owns the operator organization, its current one. */
let admin: Client;
let operatorId: string;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    const orgs = await admin.get('/api/v1/orgs');
    operatorId = orgs.body.find((o: { role: string }) => o.role === 'owner').id;
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

/** A client_credentials token request as `clientId` with `secret`: the reply, whatever it is. */
const machineToken = (clientId: string, secret: string) =>
  tokenRequest(server.url, { grant_type: 'client_credentials', client_id: clientId, client_secret: secret });

/** A client of the operator organization, registered over REST, that can ask for machine tokens. */
function machineClient(name: string): Promise<RegisteredClient> {
  return registerClient(admin, {
    name,
    description: 'Nightly exports',
    redirect_uris: ['https://exports.example.com/cb'],
    allowed_scopes: ['openid', 'email', 'exports'],
    grant_types: ['authorization_code', 'client_credentials'],
  });
}

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

const scope = (page: Page, value: string) => page.getByRole('checkbox', { name: new RegExp(`^${value} `) });

describe('admin: OAuth clients', () => {
  test('registering a client shows its secret once, and the client is stored as entered and works', async () => {
    // given the operator organization's owner on the clients page
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/clients');
    await expect(page.title()).resolves.toBe('OAuth clients · Tessera');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('OAuth clients');
    await expect(
      page
        .getByRole('navigation', { name: 'Administration' })
        .getByRole('link', { name: 'OAuth clients' })
        .getAttribute('aria-current'),
    ).resolves.toBe('page');
    // consent is asked by default, openid ticked
    await expect(page.getByRole('checkbox', { name: 'Require consent' }).isChecked()).resolves.toBe(true);
    await expect(scope(page, 'openid').isChecked()).resolves.toBe(true);

    // when they fill in the registration form and submit it
    await page.getByLabel('Name', { exact: true }).fill('Acme Reports');
    await page.getByLabel('Description', { exact: true }).fill('Weekly reports for the whole team');
    await page
      .getByLabel('Redirect URIs', { exact: true })
      .fill('https://reports.example.com/cb\n\n  http://localhost:8080/callback  \n');
    await page.getByLabel('Allowed origins', { exact: true }).fill('https://reports.example.com');
    await scope(page, 'email').check();
    await scope(page, 'organization').check();
    await page.getByLabel('Product scopes', { exact: true }).fill('reports');
    await page.getByText('Advanced settings').click();
    await page.getByRole('checkbox', { name: /^client_credentials / }).check();
    await submit(page, 'Register client');

    // then the client id and the secret are shown, with the warning
    const box = page.getByTestId('client-secret-box');
    await box.waitFor();
    await expect(box.textContent()).resolves.toContain('Save this secret now: it will not be shown again.');
    const clientId = (await box.getByTestId('shown-client-id').textContent())!;
    const secret = (await box.getByTestId('shown-client-secret').textContent())!;
    expect(clientId).toMatch(/^tsc_/);
    expect(secret).toMatch(/^tscs_/);
    // the focus moved to it, for keyboard and screen reader users
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('secret-heading');
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('admin-clients.png', screenshots).pathname, fullPage: true });

    // and the client is stored as entered, in the current organization
    const stored = await admin.get(`/api/v1/oauth-clients/${clientId}`);
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({
      client_id: clientId,
      organization_id: operatorId,
      name: 'Acme Reports',
      description: 'Weekly reports for the whole team',
      redirect_uris: ['https://reports.example.com/cb', 'http://localhost:8080/callback'],
      allowed_origins: ['https://reports.example.com'],
      allowed_scopes: ['openid', 'email', 'organization', 'reports'],
      grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
      id_token_signed_response_alg: 'RS256',
      consent_required: true,
      enabled: true,
    });

    // and the secret shown authenticates the client at the token endpoint
    const token = await machineToken(clientId, secret);
    expect(token.status).toBe(200);
    expect(token.body.access_token).toBeTruthy();

    // and the form is ready for the next registration
    await expect(page.getByLabel('Name', { exact: true }).inputValue()).resolves.toBe('');

    // when the page is reloaded
    await page.reload();

    // then the secret is gone for good, and the client is in the list
    await expect(page.getByTestId('client-secret-box').count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(secret);
    const row = page.locator(`[data-testid="client-row"][data-client-id="${clientId}"]`);
    const text = await row.textContent();
    expect(text).toContain('Acme Reports');
    expect(text).toContain('Enabled');
    expect(text).toContain('https://reports.example.com/cb');
    await expect(
      row.getByRole('list', { name: 'Scopes of Acme Reports' }).locator('li').allTextContents(),
    ).resolves.toEqual(['openid', 'email', 'organization', 'reports']);
    await page.context().close();
  });

  test('a redirect URI that is not https is refused under its field, and what was typed stays', async () => {
    // given the clients page
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/clients');
    const before = (await admin.get('/api/v1/oauth-clients')).body.oauth_clients.length;

    // when a plain-http redirect URI to another host is submitted
    await page.getByLabel('Name', { exact: true }).fill('Insecure App');
    await page.getByLabel('Redirect URIs', { exact: true }).fill('https://ok.example.com/cb\nhttp://example.com/cb');
    await page.getByLabel('Product scopes', { exact: true }).fill('Not_A_Scope');
    await submit(page, 'Register client');

    // then the form says what is wrong, each problem under its field and tied to it
    await expect(page.getByRole('alert').textContent()).resolves.toContain('correct the fields marked below');
    const redirects = page.getByLabel('Redirect URIs', { exact: true });
    await expect.poll(() => redirects.getAttribute('aria-invalid')).toBe('true');
    await expect(redirects.getAttribute('aria-describedby')).resolves.toContain('client-redirect-uris-error');
    await expect(page.locator('#client-redirect-uris-error').textContent()).resolves.toContain(
      '“http://example.com/cb” must be an absolute https URL',
    );
    await expect(page.locator('#client-scopes-error').textContent()).resolves.toContain(
      '“Not_A_Scope” is not a known scope',
    );
    await expect(page.locator('#client-name-error').count()).resolves.toBe(0);
    // and what was typed is still there, and no secret is shown
    await expect(page.getByLabel('Name', { exact: true }).inputValue()).resolves.toBe('Insecure App');
    await expect(redirects.inputValue()).resolves.toBe('https://ok.example.com/cb\nhttp://example.com/cb');
    await expect(page.getByTestId('client-secret-box').count()).resolves.toBe(0);

    // and nothing was registered
    expect((await admin.get('/api/v1/oauth-clients')).body.oauth_clients.length).toBe(before);
    await page.context().close();
  });

  test('the edit page changes the settings, and Disable then Enable turns the client off and on', async () => {
    // given a client that can get machine tokens
    const client = await machineClient('Exporter');
    const page = await signedInPage(browser, server.url, ADMIN);

    // when its admin opens it from the list
    await page.goto('/admin/clients');
    await page.getByRole('link', { name: 'Exporter', exact: true }).click();
    await page.waitForURL((url) => url.pathname === `/admin/clients/${client.id}`);

    // then the page shows the client, with its current settings in the form
    await expect(page.title()).resolves.toBe('Exporter · OAuth clients · Tessera');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Exporter');
    await expect(page.getByTestId('client-id').textContent()).resolves.toBe(client.client_id);
    await expect(page.getByLabel('Name', { exact: true }).inputValue()).resolves.toBe('Exporter');
    await expect(page.getByLabel('Redirect URIs', { exact: true }).inputValue()).resolves.toBe(
      'https://exports.example.com/cb',
    );
    await expect(scope(page, 'email').isChecked()).resolves.toBe(true);
    await expect(scope(page, 'profile').isChecked()).resolves.toBe(false);
    await expect(page.getByLabel('Product scopes', { exact: true }).inputValue()).resolves.toBe('exports');

    // when the settings are changed and saved
    await page.getByLabel('Name', { exact: true }).fill('Exporter v2');
    await page.getByLabel('Description', { exact: true }).fill('Hourly exports');
    await page.getByLabel('Allowed origins', { exact: true }).fill('https://exports.example.com');
    await scope(page, 'email').uncheck();
    await page.getByLabel('Product scopes', { exact: true }).fill('exports audits');
    await page.getByRole('checkbox', { name: 'Require consent' }).uncheck();
    await submit(page, 'Save changes');

    // then the page says so and shows the stored values
    await expect(page.getByRole('status').textContent()).resolves.toContain('Changes saved.');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Exporter v2');
    await expect(page.getByLabel('Product scopes', { exact: true }).inputValue()).resolves.toBe('exports audits');
    const stored = await admin.get(`/api/v1/oauth-clients/${client.id}`);
    expect(stored.body).toMatchObject({
      name: 'Exporter v2',
      description: 'Hourly exports',
      redirect_uris: ['https://exports.example.com/cb'],
      allowed_origins: ['https://exports.example.com'],
      allowed_scopes: ['openid', 'exports', 'audits'],
      grant_types: ['authorization_code', 'client_credentials'],
      consent_required: false,
      enabled: true,
    });
    expect((await machineToken(client.client_id, client.client_secret)).status).toBe(200);

    // when the client is disabled
    await submit(page, 'Disable client');

    // then it shows as disabled, is stored so, and the token endpoint refuses it
    await expect(page.getByTestId('client-status').textContent()).resolves.toBe('Disabled');
    await expect(page.getByRole('status').textContent()).resolves.toContain('The client is disabled.');
    expect((await admin.get(`/api/v1/oauth-clients/${client.id}`)).body.enabled).toBe(false);
    const refused = await machineToken(client.client_id, client.client_secret);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_client');
    await page.goto('/admin/clients');
    await expect(page.locator(`[data-client-id="${client.client_id}"]`).textContent()).resolves.toContain('Disabled');

    // when it is enabled again
    await page.goto(`/admin/clients/${client.id}`);
    await submit(page, 'Enable client');

    // then it works again
    await expect(page.getByTestId('client-status').textContent()).resolves.toBe('Enabled');
    expect((await admin.get(`/api/v1/oauth-clients/${client.id}`)).body.enabled).toBe(true);
    expect((await machineToken(client.client_id, client.client_secret)).status).toBe(200);
    await page.context().close();
  });

  test('an edit that breaks a rule is refused under its field', async () => {
    // given a browser sign-in client
    const client = await machineClient('Strict');
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto(`/admin/clients/${client.id}`);

    // when its only redirect URI is removed while it keeps the authorization_code grant
    await page.getByLabel('Redirect URIs', { exact: true }).fill('');
    await submit(page, 'Save changes');

    // then the problem is shown under Redirect URIs and nothing changed
    await expect(page.getByRole('alert').textContent()).resolves.toContain('The changes were not saved');
    await expect(page.locator('#client-redirect-uris-error').textContent()).resolves.toContain(
      'at least one is needed for the authorization_code grant',
    );
    expect((await admin.get(`/api/v1/oauth-clients/${client.id}`)).body.redirect_uris).toEqual([
      'https://exports.example.com/cb',
    ]);
    await page.context().close();
  });

  test('Rotate secret asks for confirmation, shows the new secret once, and the old one stops working', async () => {
    // given a client whose secret works
    const client = await machineClient('Rotator');
    expect((await machineToken(client.client_id, client.client_secret)).status).toBe(200);
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto(`/admin/clients/${client.id}`);
    const confirm = page.getByRole('checkbox', { name: 'I understand that the current secret stops working now' });

    // when Rotate secret is pressed without confirming, the browser keeps the form back
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await expect(confirm.evaluate((el: HTMLInputElement) => el.validity.valueMissing)).resolves.toBe(true);
    await expect(page.getByTestId('client-secret-box').count()).resolves.toBe(0);
    expect((await machineToken(client.client_id, client.client_secret)).status).toBe(200);

    // when it is confirmed and pressed
    await confirm.check();
    await submit(page, 'Rotate secret');

    // then the new secret is shown, with the warning
    const box = page.getByTestId('client-secret-box');
    await box.waitFor();
    await expect(box.textContent()).resolves.toContain('Save this secret now: it will not be shown again.');
    await expect(box.getByTestId('shown-client-id').textContent()).resolves.toBe(client.client_id);
    const secret = (await box.getByTestId('shown-client-secret').textContent())!;
    expect(secret).toMatch(/^tscs_/);
    expect(secret).not.toBe(client.client_secret);

    // and the old secret no longer authenticates, the new one does
    const old = await machineToken(client.client_id, client.client_secret);
    expect(old.status).toBe(401);
    expect(old.body.error).toBe('invalid_client');
    expect((await machineToken(client.client_id, secret)).status).toBe(200);

    // and a reload does not show it again
    await page.reload();
    await expect(page.getByTestId('client-secret-box').count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(secret);

    // and the action itself insists on the confirmation too
    const unconfirmed = await page.request.post(`/admin/clients/${client.id}?/rotate`, {
      form: {},
      headers: { origin: server.url, accept: 'application/json' },
    });
    expect(JSON.parse(await unconfirmed.text())).toMatchObject({ type: 'failure', status: 400 });
    expect((await machineToken(client.client_id, secret)).status).toBe(200);
    await page.context().close();
  });

  test('Delete asks for confirmation, removes the client and goes back to the list', async () => {
    // given a client
    const client = await machineClient('Doomed');
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto(`/admin/clients/${client.id}`);

    // when the deletion is confirmed
    await page.getByRole('checkbox', { name: 'Yes, delete “Doomed”' }).check();
    await page.getByRole('button', { name: 'Delete client' }).click();

    // then the list says so and no longer has it
    await page.waitForURL((url) => url.pathname === '/admin/clients');
    await expect(page.getByRole('status').textContent()).resolves.toContain('The client was deleted.');
    await expect(page.locator(`[data-client-id="${client.client_id}"]`).count()).resolves.toBe(0);

    // and it is gone
    expect((await admin.get(`/api/v1/oauth-clients/${client.id}`)).status).toBe(404);
    expect((await machineToken(client.client_id, client.client_secret)).status).toBe(401);
    await page.context().close();
  });

  test("another organization's client is not found here, even for a platform admin, and its admins see only theirs", async () => {
    // given a client of the tenant, registered by the tenant's admin
    const theirs = await registerClient(tenant.admin.api, {
      name: 'Tenant App',
      redirect_uris: ['https://tenant.example.com/cb'],
      allowed_scopes: ['openid'],
    });
    const ours = await machineClient('Operator Only');

    // when the platform admin, acting in the operator organization, opens it
    const page = await signedInPage(browser, server.url, ADMIN);
    const response = await page.goto(`/admin/clients/${theirs.id}`);

    // then it is not found, and not listed
    expect(response?.status()).toBe(404);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Page not found');
    await expect(page.locator('main').textContent()).resolves.not.toContain('Tenant App');
    expect((await page.goto('/admin/clients/no-such-client'))?.status()).toBe(404);
    await page.goto('/admin/clients');
    await expect(page.locator(`[data-client-id="${theirs.client_id}"]`).count()).resolves.toBe(0);

    // and the page's actions refuse it too
    const deleting = await page.request.post(`/admin/clients/${theirs.id}?/delete`, {
      form: { confirm: 'on' },
      headers: { origin: server.url },
    });
    expect(deleting.status()).toBe(404);
    expect((await tenant.admin.api.get(`/api/v1/oauth-clients/${theirs.id}`)).status).toBe(200);
    await page.context().close();

    // when the tenant's admin opens the clients page
    const theirPage = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await theirPage.goto('/admin/clients');

    // then only the tenant's client is listed, and it opens
    await expect(theirPage.getByTestId('client-row').count()).resolves.toBe(1);
    await expect(theirPage.locator(`[data-client-id="${theirs.client_id}"]`).count()).resolves.toBe(1);
    await expect(theirPage.locator(`[data-client-id="${ours.client_id}"]`).count()).resolves.toBe(0);
    expect((await theirPage.goto(`/admin/clients/${theirs.id}`))?.status()).toBe(200);
    expect((await theirPage.goto(`/admin/clients/${ours.id}`))?.status()).toBe(404);
    await theirPage.context().close();
  });

  test('a member of the organization is refused, page and actions alike', async () => {
    // given the tenant's member, signed in
    const page = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });

    // when they open the clients page
    const response = await page.goto('/admin/clients');

    // then access is denied
    expect(response?.status()).toBe(403);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Access denied');

    // and posting the registration form directly registers nothing
    const posted = await page.request.post('/admin/clients?/create', {
      form: { name: 'Sneaky', redirect_uris: 'https://sneaky.example.com/cb', scopes: 'openid' },
      headers: { origin: server.url },
    });
    expect(posted.status()).toBe(403);
    expect(
      (await tenant.admin.api.get('/api/v1/oauth-clients')).body.oauth_clients.map((c: { name: string }) => c.name),
    ).not.toContain('Sneaky');
    await page.context().close();
  });

  test('an initial access token is made, shown once, registers a client by itself, and is deleted', async () => {
    // given a tenant's admin on the clients page
    const page = await signedInPage(browser, server.url, { email: tenant.admin.email, password: PASSWORD });
    await page.goto('/admin/clients');
    const section = page.getByTestId('registration-tokens');
    await expect(section.getByText('No initial access tokens.').isVisible()).resolves.toBe(true);

    // a scope that is none is refused by its field's name, in this form only
    await section.getByLabel('Token name', { exact: true }).fill('Agents');
    await section.getByLabel('Scopes its clients may be given', { exact: true }).fill('not-a-scope!');
    await submit(page, 'Make a token');
    await expect(section.getByRole('alert').textContent()).resolves.toContain('Scopes its clients may be given');
    await expect(page.getByRole('alert').count()).resolves.toBe(1);

    // when they make a token for public clients with two scopes
    await section.getByLabel('Token name', { exact: true }).fill('Agents');
    await section.getByLabel('Scopes its clients may be given', { exact: true }).fill('openid email');
    await submit(page, 'Make a token');

    // then it is shown once, and an app registers with it
    const token = (await page.getByTestId('registration-token').textContent())?.trim() ?? '';
    expect(token).toMatch(/^tsit_/);
    const registered = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['https://agent.example.com/cb'], client_name: 'Agent' }),
    });
    expect(registered.status).toBe(201);
    expect(await registered.json()).toMatchObject({ token_endpoint_auth_method: 'none', scope: 'openid email' });
    await page.goto('/admin/clients');
    await expect(page.getByRole('link', { name: 'Agent', exact: true }).isVisible()).resolves.toBe(true);
    const row = page.getByTestId('registration-token-row');
    await expect(row.textContent()).resolves.toContain('Public (no secret)');
    await expect(page.getByTestId('registration-token').count()).resolves.toBe(0);

    // and once deleted it registers nothing more
    await submit(page, 'Delete Agents');
    await expect(page.getByRole('status').textContent()).resolves.toContain('The token was deleted');
    await expect(row.count()).resolves.toBe(0);
    const again = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['https://agent.example.com/cb'] }),
    });
    expect(again.status).toBe(401);
    await page.context().close();
  });

  test('a signed-out visitor is sent to sign in and back', async () => {
    const page = await freshPage(browser, server.url);
    await page.goto('/admin/clients');
    const login = new URL(page.url());
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toBe('/admin/clients');
    await page.context().close();
  });
});
