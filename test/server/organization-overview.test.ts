// The organizationOverview query (the admin dashboard's counts): each count moves as things are made through the
// API; the "getting started" steps tick themselves off from the same data; an organization's owners and admins read
// it, a member is refused (403), another tenant's owner is told it does not exist (404); only platform admins get the
// platform-wide counts and the product step.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { registerClient } from '../helpers/oauth.ts';

let server: TestServer;
let platform: Client;
let operatorId: string;
let tenant: Tenant;
let other: Tenant;

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

const OVERVIEW = /* GraphQL */ `
  query ($org: String!) {
    organizationOverview(organizationId: $org) {
      organizationId
      members
      activeSubscriptions
      seatsUsed
      seatsTotal
      oauthClients
      webhooks
      failingWebhooks
      gettingStarted {
        product
        oauthClient
        webhook
        invitation
      }
      platform {
        organizations
        users
        products
      }
    }
  }
`;

const overviewAs = (api: Client, organizationId: string) =>
  api.post('/graphql', { query: OVERVIEW, variables: { org: organizationId } });

/** The overview, which must be answered. */
async function overview(api: Client, organizationId: string) {
  const reply = await overviewAs(api, organizationId);
  expect(reply.body.errors, JSON.stringify(reply.body.errors)).toBeUndefined();
  return reply.body.data.organizationOverview;
}

/** The top-level error's code, with no data. */
async function refusal(api: Client, organizationId: string): Promise<string> {
  const reply = await overviewAs(api, organizationId);
  expect(reply.body.data?.organizationOverview ?? null).toBeNull();
  return reply.body.errors[0].extensions.code;
}

async function created(reply: Promise<{ status: number; body: any }>) {
  const r = await reply;
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body;
}

beforeAll(async () => {
  // Webhook URLs are checked against DNS at creation: every name answers a public address here.
  server = await startTestServer({ webhookResolver: async () => [{ address: '93.184.215.14', family: 4 }] });
  const signedIn = await signIn(server.url, ADMIN.email, ADMIN.password);
  platform = signedIn.api;
  operatorId = signedIn.login.organization.id;
  [tenant, other] = await Promise.all([
    createTenant(server.url, platform, 'Tenant'),
    createTenant(server.url, platform, 'Other'),
  ]);
});
afterAll(() => server?.stop());

describe('organizationOverview', () => {
  let founder: Person;
  let freshId: string;

  it('counts a new organization from nothing, each thing made through the API moving its count and ticking its step', async () => {
    // given a person (the tenant's member) who founds an organization of their own
    founder = tenant.member;
    freshId = (await created(founder.api.post('/v1/organizations', { name: 'Fresh' }))).id;

    // then it has its founder and nothing else, and no step is done (the product step is not theirs)
    expect(await overview(founder.api, freshId)).toEqual({
      organizationId: freshId,
      members: 1,
      activeSubscriptions: 0,
      seatsUsed: 0,
      seatsTotal: 0,
      oauthClients: 0,
      webhooks: 0,
      failingWebhooks: 0,
      gettingStarted: { product: null, oauthClient: false, webhook: false, invitation: false },
      platform: null,
    });

    // when an OAuth client is registered there
    await registerClient(founder.api, {
      name: 'Fresh app',
      redirect_uris: ['https://fresh.example.com/cb'],
      allowed_scopes: ['openid'],
      organization_id: freshId,
    });
    // then it is counted, and its step is done
    expect(await overview(founder.api, freshId)).toMatchObject({
      oauthClients: 1,
      gettingStarted: { oauthClient: true, webhook: false },
    });

    // when a webhook is added
    const hook = await created(
      founder.api.post('/api/v1/webhooks', {
        url: 'https://hooks.example.test/fresh',
        events: ['member.added'],
        organizationId: freshId,
      }),
    );
    expect(await overview(founder.api, freshId)).toMatchObject({
      webhooks: 1,
      failingWebhooks: 0,
      gettingStarted: { webhook: true },
    });
    // and its deliveries fail (five failed attempts set failing_since: the worker's part, written here directly)
    await server.base.db.webhook.update({ where: { id: hook.id }, data: { failingSince: new Date() } });
    expect(await overview(founder.api, freshId)).toMatchObject({ webhooks: 1, failingWebhooks: 1 });

    // when someone is invited, the step is done before they accept; accepting makes them a member
    const invitation = await created(
      founder.api.post(`/v1/organizations/${freshId}/invitations`, {
        email: 'fresh-colleague@example.test',
        role: 'member',
      }),
    );
    expect(await overview(founder.api, freshId)).toMatchObject({ members: 1, gettingStarted: { invitation: true } });
    const accepted = await client(server.url).post('/api/v1/invitations/accept', {
      token: invitation.token,
      name: 'Colleague',
      password: PASSWORD,
    });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(await overview(founder.api, freshId)).toMatchObject({ members: 2 });

    // when the platform sells it an active and a trial subscription, and one that is cancelled
    const product = await created(
      platform.post('/v1/products', { name: 'Fresh product', slug: 'fresh-product', features: [] }),
    );
    const subscribe = (status: string, seats: number) =>
      created(
        platform.post('/api/v1/subscriptions', {
          organization_id: freshId,
          product_id: product.id,
          total_seats: seats,
          price_per_seat: 10,
          billing_cycle: 'monthly',
          status,
        }),
      );
    const active = await subscribe('active', 3);
    await subscribe('trial', 2);
    const cancelled = await subscribe('active', 5);
    await created(founder.api.post(`/api/v1/subscriptions/${cancelled.id}/seats`, { user_id: founder.id }));
    const cancel = await platform.delete(`/api/v1/subscriptions/${cancelled.id}`);
    expect([cancel.status, cancel.body.status]).toEqual([200, 'cancelled']);
    // and the founder takes a seat of the active one
    await created(founder.api.post(`/api/v1/subscriptions/${active.id}/seats`, { user_id: founder.id }));

    // then the live subscriptions count, with their seats; the cancelled one and its seat do not
    expect(await overview(founder.api, freshId)).toMatchObject({ activeSubscriptions: 2, seatsUsed: 1, seatsTotal: 5 });
  });

  it("counts only the organization's own: another tenant's clients, webhooks and members are not in it", async () => {
    // given a client and a webhook in the tenant
    await registerClient(tenant.admin.api, {
      name: 'Tenant app',
      redirect_uris: ['https://tenant.example.com/cb'],
      allowed_scopes: ['openid'],
    });
    await created(
      tenant.admin.api.post('/api/v1/webhooks', { url: 'https://hooks.example.test/tenant', events: ['member.added'] }),
    );

    // then the tenant's admin sees its three people and its own client and webhook, none failing
    expect(await overview(tenant.admin.api, tenant.id)).toMatchObject({
      organizationId: tenant.id,
      members: 3,
      oauthClients: 1,
      webhooks: 1,
      failingWebhooks: 0,
      activeSubscriptions: 0,
      gettingStarted: { product: null, oauthClient: true, webhook: true, invitation: true },
      platform: null,
    });
    // and the other tenant, untouched, has none of them
    expect(await overview(other.owner.api, other.id)).toMatchObject({
      members: 3,
      oauthClients: 0,
      webhooks: 0,
      failingWebhooks: 0,
    });
  });

  it('gives platform admins the platform-wide counts and the product step, in any organization', async () => {
    // given the catalog has a product (the first test made one)
    const [organizations, users, products] = await Promise.all([
      server.base.db.organization.count(),
      server.base.db.user.count(),
      server.base.db.product.count(),
    ]);
    expect(products).toBeGreaterThan(0);

    // when the platform admin reads the operator organization's overview
    const own = await overview(platform, operatorId);

    // then it carries the platform's counts, and the product step is done
    expect(own.platform).toEqual({ organizations, users, products });
    expect(own.gettingStarted.product).toBe(true);
    // and a tenant's overview too, though the platform admin is no member there
    expect(await overview(platform, tenant.id)).toMatchObject({
      organizationId: tenant.id,
      members: 3,
      platform: { organizations, users, products },
    });
  });

  it("answers another tenant's owner 404, a member 403, a signed-out caller 401; an unknown organization is 404", async () => {
    expect(await refusal(other.owner.api, tenant.id)).toBe('not_found');
    expect(await refusal(other.owner.api, freshId)).toBe('not_found');
    expect(await refusal(tenant.member.api, tenant.id)).toBe('forbidden');
    expect(await refusal(client(server.url), tenant.id)).toBe('unauthenticated');
    expect(await refusal(platform, UNKNOWN_ID)).toBe('not_found');
    // the owner of another tenant sees their own, as owner
    expect(await overview(other.owner.api, other.id)).toMatchObject({ organizationId: other.id, platform: null });
  });

  it('is readable with an admin API key of the organization, not with a member one', async () => {
    const key = async (api: Client, role: string) => {
      const made = await created(api.post('/api/v1/api-keys', { name: `overview ${role}`, role }));
      return client(server.url, { apiKey: { key: made.key, secret: made.secret } });
    };
    expect(await overview(await key(tenant.admin.api, 'admin'), tenant.id)).toMatchObject({
      organizationId: tenant.id,
      members: 3,
    });
    expect(await refusal(await key(tenant.admin.api, 'member'), tenant.id)).toBe('forbidden');
    expect(await refusal(await key(tenant.admin.api, 'admin'), other.id)).toBe('not_found');
  });
});
