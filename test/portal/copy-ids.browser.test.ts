import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { launchChromium, signedInPage } from '../helpers/browser.ts';
import { addPerson, createTenant, type Person, type Tenant } from '../helpers/fixtures.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { registerClient } from '../helpers/oauth.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';

// The ids that the REST API and the CLI take, on the admin pages that list or show their records, in headless
// Chromium: each is shown whole beside a copy button, the button puts exactly that id on the clipboard, and the
// copied text is what the API answers to (GET or listed by that id).

let ca: TestCa;
let server: TestServer;
let browser: Browser;
let page: Page;
/** The platform admin's REST client, in the operator organization. */
let admin: Client;
let operatorId: string;
let tenant: Tenant;
let member: Person;
const ids = { product: '', subscription: '', client: '', oauthClientId: '', webhook: '', apiKey: '', app: '' };

beforeAll(async () => {
  ca = makeTestCa(['receiver.test']);
  server = await startTestServer({
    env: { WEBHOOK_CA_FILE: ca.caFile },
    // receiver.test, the webhook's and the app's host, is this machine: nothing is sent to it here.
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  try {
    browser = await launchChromium();
    const signedIn = await signIn(server.url, ADMIN.email, ADMIN.password);
    admin = signedIn.api;
    operatorId = signedIn.login.organization.id;
    tenant = await createTenant(server.url, admin, 'Copy Ids Tenant');
    member = await addPerson(server.url, admin, operatorId, 'member', 'copy-ids-member');
    const created = async (path: string, body: unknown) => {
      const reply = await admin.post(path, body);
      if (reply.status !== 201) throw new Error(`${path}: ${reply.status} ${JSON.stringify(reply.body)}`);
      return reply.body;
    };
    ids.product = (await created('/v1/products', { name: 'Copyable', slug: 'copyable', features: [] })).id;
    ids.subscription = (
      await created('/v1/subscriptions', {
        organization_id: operatorId,
        product_id: ids.product,
        total_seats: 2,
        price_per_seat: 1,
        billing_cycle: 'monthly',
      })
    ).id;
    const client = await registerClient(admin, {
      name: 'Copyable client',
      redirect_uris: ['https://copy.example.test/cb'],
      allowed_scopes: ['openid'],
    });
    ids.client = client.id;
    ids.oauthClientId = client.client_id;
    ids.webhook = (
      await created('/api/v1/webhooks', { url: 'https://receiver.test/hooks', events: ['member.added'] })
    ).id;
    ids.apiKey = (await created('/api/v1/api-keys', { name: 'Copyable key', role: 'admin' })).id;
    ids.app = (
      await created('/api/v1/apps', {
        name: 'Copyable app',
        webhook_url: 'https://receiver.test/app',
        redirect_uris: ['https://receiver.test/cb'],
        scopes: ['openid'],
      })
    ).id;
    page = await signedInPage(browser, server.url, ADMIN);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  } catch (error) {
    await browser?.close();
    await server.stop();
    ca.remove();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  ca?.remove();
});

/**
 * On `path`, the cell or definition showing `id` whole in a <code>, with its copy button: clicks it and returns
 * what landed on the clipboard.
 */
async function copied(path: string, id: string): Promise<string> {
  await page.goto(path);
  const shown = page.locator('main :is(td, dd, span.id)', {
    has: page.locator('code', { hasText: new RegExp(`^${id}$`) }),
  });
  await expect(shown.count(), `${path}: ${id} shown`).resolves.toBeGreaterThan(0);
  const button = shown.first().getByRole('button', { name: /^Copy / });
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await button.click();
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText()), { timeout: 5_000 }).toBe(id);
  return page.evaluate(() => navigator.clipboard.readText());
}

describe('ids to copy where the API and the CLI need them', () => {
  test('organizations: the list, an organization’s page, and the settings of the current one', async () => {
    const fromList = await copied('/admin/organizations', tenant.id);
    expect((await admin.get(`/v1/organizations/${fromList}`)).body.name).toBe(tenant.name);
    expect(await copied(`/admin/organizations/${tenant.id}`, tenant.id)).toBe(tenant.id);
    // a member's user id on the organization's page: what seats and role changes take
    const user = await copied(`/admin/organizations/${tenant.id}`, tenant.member.id);
    expect((await admin.get(`/v1/users/${user}`)).body.email).toBe(tenant.member.email);
    const current = await copied('/admin/settings', operatorId);
    expect((await admin.get(`/v1/organizations/${current}`)).status).toBe(200);
  });

  test('members: each member’s user id', async () => {
    const user = await copied('/admin/settings/members', member.id);
    expect((await admin.get(`/v1/users/${user}`)).body.email).toBe(member.email);
  });

  test('products and subscriptions', async () => {
    // the id a subscription names its product by
    const product = await copied('/admin/products', ids.product);
    const products: { id: string; slug: string }[] = (await admin.get('/v1/products')).body.products;
    expect(products.find((p) => p.id === product)?.slug).toBe('copyable');
    const listed = await copied('/admin/subscriptions', ids.subscription);
    expect((await admin.get(`/v1/subscriptions/${listed}`)).body.product_id).toBe(ids.product);
    expect(await copied(`/admin/subscriptions/${ids.subscription}`, ids.subscription)).toBe(ids.subscription);
    expect(await copied(`/admin/subscriptions/${ids.subscription}`, ids.product)).toBe(ids.product);
    expect(await copied(`/admin/subscriptions/${ids.subscription}`, operatorId)).toBe(operatorId);
  });

  test('OAuth clients: the client_id', async () => {
    const fromList = await copied('/admin/clients', ids.oauthClientId);
    expect((await admin.get(`/api/v1/oauth-clients/${fromList}`)).body.name).toBe('Copyable client');
    expect(await copied(`/admin/clients/${ids.client}`, ids.oauthClientId)).toBe(ids.oauthClientId);
  });

  test('webhooks: the id on the webhook’s page', async () => {
    const webhook = await copied(`/admin/settings/webhooks/${ids.webhook}`, ids.webhook);
    expect((await admin.get(`/api/v1/webhooks/${webhook}`)).body.url).toBe('https://receiver.test/hooks');
  });

  test('API keys: the id that revokes the key', async () => {
    const key = await copied('/admin/settings/api-keys', ids.apiKey);
    const keys: { id: string; name: string }[] = (await admin.get('/api/v1/api-keys')).body.api_keys;
    expect(keys.find((k) => k.id === key)?.name).toBe('Copyable key');
  });

  test('apps: the id that installs the app', async () => {
    const app = await copied('/admin/apps', ids.app);
    expect((await admin.get(`/api/v1/apps/${app}`)).body.name).toBe('Copyable app');
  });
});
