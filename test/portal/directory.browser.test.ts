import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { BROWSER_WAIT_MS, continueWithEmail, freshPage, launchChromium, signedInPage } from '../helpers/browser.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { client, signIn, type Client } from '../helpers/http.ts';

// /admin/settings/directory (docs/architecture.md#directory-provisioning): an organization's admin makes a SCIM
// token in headless Chromium, the directory provisions with it over real HTTP, and the page lists its requests with
// their outcome; group mappings to a role and to a subscription's seats are made and deleted; a revoked token's next
// request is refused; members get no access.

const screenshots = new URL('../.tmp/', import.meta.url);
const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';

let server: TestServer;
let browser: Browser;
let platform: Client;
let tenant: Tenant;
let subscriptionId: string;

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    tenant = await createTenant(server.url, platform, 'Acme Directory');
    // A subscription of the tenant, whose seats a group can give.
    const product = await platform.post('/v1/products', {
      name: 'Insights',
      slug: 'insights-directory',
      features: ['reports'],
    });
    expect(product.status, JSON.stringify(product.body)).toBe(201);
    const subscription = await platform.post('/api/v1/subscriptions', {
      organization_id: tenant.id,
      product_id: product.body.id,
      total_seats: 5,
      price_per_seat: 5,
      billing_cycle: 'monthly',
      status: 'active',
    });
    expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
    subscriptionId = subscription.body.id;
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

const ADMIN_OF_TENANT = () => ({ email: tenant.admin.email, password: PASSWORD });
const OWNER_OF_TENANT = () => ({ email: tenant.owner.email, password: PASSWORD });

/** The directory's side: SCIM requests with `token` as the Bearer value. */
const scim = (token: string) => client(server.url, { token });

/** A SCIM User as Entra ID or Okta first sends it. */
const scimUser = (userName: string) => ({
  schemas: [USER_SCHEMA],
  userName,
  emails: [{ value: userName, primary: true }],
  active: true,
});

/** POSTs a User with SCIM's media type, as directories send it. */
const provision = (token: string, userName: string) =>
  scim(token).post('/scim/v2/Users', scimUser(userName), {
    'content-type': 'application/scim+json',
    accept: 'application/scim+json',
  });

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

const tokenRow = (page: Page, name: string) =>
  page.getByTestId('scim-token-row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
const mappingRow = (page: Page, group: string) =>
  page.getByTestId('mapping-row').filter({ has: page.getByRole('rowheader', { name: group, exact: true }) });

describe('admin: directory', () => {
  test('a token is shown once, provisions people over SCIM, and the page lists each request with its outcome', async () => {
    // given the tenant's owner, who opens Directory from the settings navigation
    const page = await signedInPage(browser, server.url, OWNER_OF_TENANT());
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    const nav = page.getByRole('navigation', { name: 'Administration' });
    await nav.getByRole('list', { name: 'Settings' }).getByRole('link', { name: 'Directory' }).click();
    await page.waitForURL((url) => url.pathname === '/admin/settings/directory');
    await expect(page.title()).resolves.toBe('Directory · Settings · Tessera');
    await expect(nav.getByRole('link', { name: 'Directory' }).getAttribute('aria-current')).resolves.toBe('page');
    // the single sign-on entry stays beside it
    await expect(nav.getByRole('link', { name: 'Single sign-on' }).count()).resolves.toBe(1);

    // then the SCIM base URL is shown, to copy, and nothing was requested yet
    await expect(page.getByTestId('scim-url').textContent()).resolves.toBe(`${server.url}/scim/v2`);
    await page.getByRole('button', { name: 'Copy the SCIM base URL' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(`${server.url}/scim/v2`);
    await expect(page.getByTestId('requests-summary').textContent()).resolves.toContain(
      'The directory has sent no requests yet',
    );

    // when they create a token
    await page.getByLabel('Name', { exact: true }).fill('Entra ID production');
    await submit(page, 'Create token');

    // then the token is shown once, with a copy button, the warning, and the focus on it
    const box = page.getByTestId('scim-token-box');
    await box.waitFor();
    await expect(box.textContent()).resolves.toContain('you will not see it again');
    const token = (await box.getByTestId('shown-scim-token').textContent())!;
    expect(token).toMatch(/^tsd_/);
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('secret-heading');
    await box.getByRole('button', { name: 'Copy token' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(token);
    await expect(page.getByLabel('Name', { exact: true }).inputValue()).resolves.toBe('');

    // and after a reload only its name is left, active, never used
    await page.reload();
    await expect(box.count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(token);
    const row = tokenRow(page, 'Entra ID production');
    await expect(row.getByTestId('token-status').textContent()).resolves.toContain('Active');
    await expect(row.getByTestId('token-last-used').textContent()).resolves.toContain('never');

    // when the directory provisions Jane with it, and then sends her again
    const created = await provision(token, 'jane@acme.test');
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ userName: 'jane@acme.test', active: true });
    const again = await provision(token, 'jane@acme.test');
    expect(again.status, JSON.stringify(again.body)).toBe(409);

    // then Jane is a member of the organization
    const members = await tenant.admin.api.get(`/v1/organizations/${tenant.id}/members`);
    expect(JSON.stringify(members.body)).toContain('jane@acme.test');

    // and the page lists both requests, newest first: the refusal marked failed in words, with its SCIM type and
    // reason, the creation marked succeeded
    await page.reload();
    const requests = page.getByTestId('scim-request-row');
    await expect(requests.count()).resolves.toBe(2);
    await expect(page.getByTestId('requests-summary').textContent()).resolves.toMatch(
      /last 2 requests, newest first:\s+1 failed/,
    );
    const [failure, success] = [requests.nth(0), requests.nth(1)];
    await expect(failure.getAttribute('data-outcome')).resolves.toBe('failed');
    await expect(failure.getByRole('cell').first().textContent()).resolves.toMatch(/POST \S*\/Users/);
    const outcome = (await failure.getByTestId('request-outcome').innerText()).replace(/\s+/g, ' ');
    expect(outcome).toContain('Failed');
    expect(outcome).toContain('409');
    const reason = await failure.getByTestId('request-reason').innerText();
    expect(reason).toContain('uniqueness');
    expect(reason.length).toBeGreaterThan('uniqueness'.length);
    await expect(success.getAttribute('data-outcome')).resolves.toBe('succeeded');
    const succeeded = (await success.getByTestId('request-outcome').innerText()).replace(/\s+/g, ' ');
    expect(succeeded).toContain('Succeeded');
    expect(succeeded).toContain('201');
    // the token's use is recorded
    await expect(row.getByTestId('token-last-used').textContent()).resolves.toMatch(
      /\d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC/,
    );
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('admin-directory.png', screenshots).pathname, fullPage: true });
    await page.context().close();
  });

  test('a group is mapped to a role and another to seats, a duplicate is refused, and a mapping is deleted after confirmation', async () => {
    // given the tenant's admin on the page
    const page = await signedInPage(browser, server.url, ADMIN_OF_TENANT());
    await page.goto('/admin/settings/directory');
    const region = page.getByRole('region', { name: 'Group mappings' });
    expect((await region.innerText()).replace(/\s+/g, ' ')).toContain(
      'never beyond the seats bought; leaving the group frees the seat',
    );
    const gives = region.getByLabel('Members get');
    // an admin does not hand out the owner role; the subscription is offered by its product
    const options = await gives.locator('option').allTextContents();
    expect(options).toEqual(expect.arrayContaining(['The member role', 'The admin role']));
    expect(options).not.toContain('The owner role');
    expect(options.some((o) => o.startsWith('Insights ('))).toBe(true);

    // when they map Engineering to the admin role
    await region.getByLabel('Directory group').fill('Engineering');
    await gives.selectOption('role:admin');
    await submit(page, 'Add mapping');

    // then it is listed and the page says so
    await expect(page.getByRole('status').textContent()).resolves.toContain('The group “Engineering” is mapped');
    await expect(mappingRow(page, 'Engineering').getByTestId('mapping-gives').textContent()).resolves.toBe(
      'The admin role',
    );

    // when they map Analysts to the Insights subscription's seats
    await region.getByLabel('Directory group').fill('Analysts');
    await gives.selectOption(`subscription:${subscriptionId}`);
    await submit(page, 'Add mapping');

    // then both are listed, and the REST API has them as made
    await expect(mappingRow(page, 'Analysts').getByTestId('mapping-gives').textContent()).resolves.toBe(
      'A seat of Insights',
    );
    const listed = await tenant.admin.api.get('/api/v1/directory/group-mappings');
    expect(listed.status).toBe(200);
    const byGroup = Object.fromEntries(listed.body.group_mappings.map((m: { group: string }) => [m.group, m]));
    expect(byGroup.Engineering).toMatchObject({ role: 'admin' });
    expect(byGroup.Analysts).toMatchObject({ subscription_id: subscriptionId });

    // when Engineering is mapped again
    await region.getByLabel('Directory group').fill('Engineering');
    await gives.selectOption('role:member');
    await submit(page, 'Add mapping');

    // then the refusal says why, keeps what was typed, and nothing more is listed
    await expect(region.getByRole('alert').textContent()).resolves.toContain('Engineering is already mapped');
    await expect(region.getByLabel('Directory group').inputValue()).resolves.toBe('Engineering');
    await expect(page.getByTestId('mapping-row').count()).resolves.toBe(2);

    // and a blank group is refused under its field
    await region.getByLabel('Directory group').fill('   ');
    await submit(page, 'Add mapping');
    await expect(region.getByRole('alert').textContent()).resolves.toContain('The mapping was not added');
    await expect.poll(() => region.getByLabel('Directory group').getAttribute('aria-invalid')).toBe('true');

    // and the owner role, not offered, is refused when posted anyway
    const owner = await page.request.post('/admin/settings/directory?/createMapping', {
      form: { group: 'Founders', gives: 'role:owner' },
      headers: { origin: server.url },
    });
    expect(owner.status()).toBe(403);
    expect((await tenant.admin.api.get('/api/v1/directory/group-mappings')).body.group_mappings).toHaveLength(2);

    // when Delete is chosen for Analysts, then cancelled
    await mappingRow(page, 'Analysts').getByRole('link', { name: 'Delete the mapping of Analysts' }).click();
    const question = page.getByRole('heading', { name: 'Delete the mapping of “Analysts”?' });
    await question.waitFor();
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('delete-heading');
    await expect(page.locator('#delete-warning').textContent()).resolves.toContain('a seat of insights');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL((url) => url.search === '');
    await expect(page.getByTestId('mapping-row').count()).resolves.toBe(2);

    // when it is chosen again and confirmed
    await mappingRow(page, 'Analysts').getByRole('link', { name: 'Delete the mapping of Analysts' }).click();
    await question.waitFor();
    await submit(page, 'Delete mapping');

    // then only Engineering is left, here and in the API
    await expect(page.getByRole('status').textContent()).resolves.toContain('The mapping of “Analysts” was deleted');
    await expect(question.count()).resolves.toBe(0);
    await expect(page.getByTestId('mapping-row').count()).resolves.toBe(1);
    const left = (await tenant.admin.api.get('/api/v1/directory/group-mappings')).body.group_mappings;
    expect(left.map((m: { group: string }) => m.group)).toEqual(['Engineering']);

    // and deleting it again says it is gone
    const again = await page.request.post('/admin/settings/directory?/deleteMapping', {
      form: { id: byGroup.Analysts.id, confirm: 'yes' },
      headers: { origin: server.url },
    });
    expect(again.status()).toBe(404);
    expect(await again.text()).toContain('No such group mapping in this organization.');
    await page.context().close();
  });

  test('an owner may make a group give the owner role', async () => {
    const page = await signedInPage(browser, server.url, { email: tenant.owner.email, password: PASSWORD });
    await page.goto('/admin/settings/directory');
    const region = page.getByRole('region', { name: 'Group mappings' });
    await region.getByLabel('Directory group').fill('Founders');
    await region.getByLabel('Members get').selectOption('role:owner');
    await submit(page, 'Add mapping');
    await expect(mappingRow(page, 'Founders').getByTestId('mapping-gives').textContent()).resolves.toBe(
      'The owner role',
    );
    await page.context().close();
  });

  test('an admin sees the tokens but makes and revokes none: the forms are not offered, and a forged one is refused', async () => {
    // given a token the owner made, and the tenant's admin on the page
    const made = await tenant.owner.api.post('/api/v1/scim-tokens', { name: 'Owner made' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const page = await signedInPage(browser, server.url, ADMIN_OF_TENANT());
    await page.goto('/admin/settings/directory');

    // then it is listed, with no way to revoke it or make another
    await expect(tokenRow(page, 'Owner made').getByTestId('token-status').textContent()).resolves.toContain('Active');
    await expect(tokenRow(page, 'Owner made').getByRole('link', { name: 'Revoke Owner made' }).count()).resolves.toBe(
      0,
    );
    await expect(page.getByRole('button', { name: 'Create token' }).count()).resolves.toBe(0);
    await expect(page.getByTestId('owners-only').textContent()).resolves.toContain("Only the organization's owners");

    // when the forms are sent anyway, the service's refusal is the answer and nothing changes
    const created = await page.request.post('/admin/settings/directory?/createToken', {
      form: { name: 'Shadow' },
      headers: { origin: server.url },
    });
    expect(JSON.stringify(await created.json())).toContain('Only owners change how people sign in');
    const revoked = await page.request.post('/admin/settings/directory?/revokeToken', {
      form: { id: made.body.id, confirm: 'yes' },
      headers: { origin: server.url },
    });
    expect(JSON.stringify(await revoked.json())).toContain('Only owners change how people sign in');
    const listed = (await tenant.owner.api.get('/api/v1/scim-tokens')).body.scim_tokens as {
      id: string;
      name: string;
      revoked_at: string | null;
    }[];
    expect(listed.find((t) => t.id === made.body.id)?.revoked_at).toBeNull();
    expect(listed.map((t) => t.name)).not.toContain('Shadow');
    await tenant.owner.api.delete(`/api/v1/scim-tokens/${made.body.id}`);
    await page.context().close();
  });

  test('Revoke asks for confirmation, and the revoked token is refused at once', async () => {
    // given a token the directory uses
    const made = await tenant.owner.api.post('/api/v1/scim-tokens', { name: 'Okta' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const { token } = made.body;
    const works = await scim(token).get('/scim/v2/Users?filter=userName%20eq%20%22nobody%40acme.test%22');
    expect(works.status, JSON.stringify(works.body)).toBe(200);
    const page = await signedInPage(browser, server.url, OWNER_OF_TENANT());
    await page.goto('/admin/settings/directory');

    // when Revoke is chosen in its row, then cancelled
    await tokenRow(page, 'Okta').getByRole('link', { name: 'Revoke Okta' }).click();
    const question = page.getByRole('heading', { name: 'Revoke “Okta”?' });
    await question.waitFor();
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('revoke-heading');
    await page.getByRole('link', { name: 'Cancel' }).click();
    await page.waitForURL((url) => url.search === '');
    expect((await scim(token).get('/scim/v2/Users')).status).toBe(200);

    // and the action itself insists on the confirmation
    const unconfirmed = await page.request.post('/admin/settings/directory?/revokeToken', {
      form: { id: made.body.id },
      headers: { origin: server.url },
    });
    expect(unconfirmed.status()).toBe(400);
    expect((await scim(token).get('/scim/v2/Users')).status).toBe(200);

    // when Revoke is chosen again and confirmed
    await tokenRow(page, 'Okta').getByRole('link', { name: 'Revoke Okta' }).click();
    await question.waitFor();
    await submit(page, 'Revoke token');

    // then the page says so and lists it as revoked, with no Revoke link
    await expect(page.getByRole('status').textContent()).resolves.toContain('The token “Okta” was revoked');
    await expect(question.count()).resolves.toBe(0);
    await expect(tokenRow(page, 'Okta').getByTestId('token-status').textContent()).resolves.toContain('Revoked');
    await expect(tokenRow(page, 'Okta').getByRole('link', { name: 'Revoke Okta' }).count()).resolves.toBe(0);

    // and the token's next request is refused
    const refused = await provision(token, 'john@acme.test');
    expect(refused.status).toBe(401);
    const listed = (await tenant.admin.api.get('/api/v1/scim-tokens')).body.scim_tokens.find(
      (t: { id: string }) => t.id === made.body.id,
    );
    expect(listed.revoked_at).toEqual(expect.any(String));
    await page.context().close();
  });

  test("another organization's token is neither listed nor revoked here, even by a platform admin", async () => {
    // given a token of the tenant
    const made = await tenant.owner.api.post('/api/v1/scim-tokens', { name: 'Tenant directory' });
    expect(made.status).toBe(201);

    // when the platform admin, in the operator organization, opens the page and posts its revocation
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/settings/directory');
    await expect(tokenRow(page, 'Tenant directory').count()).resolves.toBe(0);
    const posted = await page.request.post('/admin/settings/directory?/revokeToken', {
      form: { id: made.body.id, confirm: 'yes' },
      headers: { origin: server.url },
    });

    // then it is not found, and the token stays active
    expect(posted.status()).toBe(404);
    const listed = (await tenant.admin.api.get('/api/v1/scim-tokens')).body.scim_tokens.find(
      (t: { id: string }) => t.id === made.body.id,
    );
    expect(listed.revoked_at).toBeNull();
    await page.context().close();
  });

  test('without JavaScript, a token is made and revoked and a group mapped as plain form posts', async () => {
    // given the page in a browser that runs no script
    const context = await browser.newContext({ baseURL: server.url, javaScriptEnabled: false });
    context.setDefaultTimeout(BROWSER_WAIT_MS);
    const page = await context.newPage();
    await page.goto('/login');
    await continueWithEmail(page, tenant.owner.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/admin/dashboard'),
      page.getByRole('button', { name: 'Sign in', exact: true }).click(),
    ]);
    await page.goto('/admin/settings/directory');

    // when a token is created
    await page.getByLabel('Name', { exact: true }).fill('No script');
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Create token' }).click()]);

    // then it is shown (no copy button without script)
    const box = page.getByTestId('scim-token-box');
    await expect(box.getByTestId('shown-scim-token').textContent()).resolves.toMatch(/^tsd_/);
    await expect(box.getByRole('button').count()).resolves.toBe(0);

    // when a group is mapped to the subscription's seats
    await page.getByLabel('Directory group').fill('No script readers');
    await page.getByLabel('Members get').selectOption(`subscription:${subscriptionId}`);
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Add mapping' }).click()]);
    await expect(page.getByRole('status').textContent()).resolves.toContain('The group “No script readers” is mapped');

    // when the token is revoked through its confirmation
    await page.goto('/admin/settings/directory');
    await tokenRow(page, 'No script').getByRole('link', { name: 'Revoke No script' }).click();
    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Revoke token' }).click()]);

    // then it is revoked
    await expect(page.getByRole('status').textContent()).resolves.toContain('The token “No script” was revoked');
    const listed = (await tenant.admin.api.get('/api/v1/scim-tokens')).body.scim_tokens.find(
      (t: { name: string }) => t.name === 'No script',
    );
    expect(listed.revoked_at).toEqual(expect.any(String));
    await context.close();
  });

  test('a member of the organization is refused, page and actions alike', async () => {
    // given the tenant's member, signed in
    const page = await signedInPage(browser, server.url, { email: tenant.member.email, password: PASSWORD });

    // when they open the page, then access is denied
    const response = await page.goto('/admin/settings/directory');
    expect(response?.status()).toBe(403);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Access denied');

    // and posting the forms directly makes nothing
    const token = await page.request.post('/admin/settings/directory?/createToken', {
      form: { name: 'Sneaky' },
      headers: { origin: server.url },
    });
    expect(token.status()).toBe(403);
    const mapping = await page.request.post('/admin/settings/directory?/createMapping', {
      form: { group: 'Sneaky', gives: 'role:admin' },
      headers: { origin: server.url },
    });
    expect(mapping.status()).toBe(403);
    const tokens = (await tenant.admin.api.get('/api/v1/scim-tokens')).body.scim_tokens.map(
      (t: { name: string }) => t.name,
    );
    expect(tokens).not.toContain('Sneaky');
    const groups = (await tenant.admin.api.get('/api/v1/directory/group-mappings')).body.group_mappings.map(
      (m: { group: string }) => m.group,
    );
    expect(groups).not.toContain('Sneaky');
    await page.context().close();
  });

  test('a signed-out visitor is sent to sign in and back', async () => {
    const page = await freshPage(browser, server.url);
    await page.goto('/admin/settings/directory');
    const login = new URL(page.url());
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toBe('/admin/settings/directory');
    await page.context().close();
  });
});
