// Licenses and entitlements over /api/v1/licenses: a user's licenses are the slugs of the products they hold a seat
// of, on active or trial subscriptions not past end_date, in the organization they act in; the check answers every
// business outcome with a code, in one SQL statement; any valid access token may call both routes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onStatement } from '../../schema/db.ts';
import { makeContext } from '../../schema/context.ts';
import { checkLicense } from '../../schema/modules/licenses/licenses.service.ts';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import { authorize, codeFrom, exchangeCode, registerClient, sessionOf } from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/callback';
const PAST = '2020-01-01T00:00:00.000Z';
const FUTURE = '2099-01-01T00:00:00.000Z';

let server: TestServer;
let platform: Client;
let tenant: Tenant;
let other: Tenant;
/** The member through an app: an access token takes the check's direct path (server/rest/licenses.ts). */
let memberApp: Client;
const products: Record<string, { id: string; slug: string; name: string; features: string[] }> = {};
const subscriptions: Record<string, string> = {};

async function subscribe(
  name: string,
  slug: string,
  organizationId: string,
  status: string,
  endDate: string | null,
  seated: { id: string; api: Client; admin: Client }[] = [],
) {
  const reply = await platform.post('/api/v1/subscriptions', {
    organization_id: organizationId,
    product_id: products[slug]!.id,
    total_seats: 5,
    price_per_seat: 3,
    billing_cycle: 'monthly',
    status: 'active',
    end_date: endDate,
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  for (const person of seated)
    expect(
      (await person.admin.post(`/api/v1/subscriptions/${reply.body.id}/seats`, { user_id: person.id })).status,
    ).toBe(201);
  if (status !== 'active')
    expect((await platform.patch(`/api/v1/subscriptions/${reply.body.id}`, { status })).status).toBe(200);
  subscriptions[name] = reply.body.id;
}

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  [tenant, other] = await Promise.all([createTenant(server.url, platform), createTenant(server.url, platform)]);
  for (const [slug, features] of Object.entries({
    crm: ['reports', 'export'],
    wiki: ['edit'],
    chat: ['voice'],
    legacy: ['a'],
    lapsed: ['a'],
    ended: ['a'],
    notes: ['a'],
  })) {
    const reply = await platform.post('/v1/products', { name: slug.toUpperCase(), slug, features });
    products[slug] = { id: reply.body.id, slug, name: slug.toUpperCase(), features };
  }
  const member = { id: tenant.member.id, api: tenant.member.api, admin: tenant.admin.api };
  await subscribe('crm', 'crm', tenant.id, 'active', FUTURE, [member]);
  await subscribe('wiki', 'wiki', tenant.id, 'trial', null, [member]);
  await subscribe('chat', 'chat', tenant.id, 'active', null);
  await subscribe('legacy', 'legacy', tenant.id, 'cancelled', null, [member]);
  // Past its end date, not swept yet: no longer a license.
  await subscribe('lapsed', 'lapsed', tenant.id, 'active', PAST, [member]);
  await subscribe('ended', 'ended', tenant.id, 'expired', null, [member]);
  await subscribe('notes', 'notes', other.id, 'active', null, [
    { id: other.member.id, api: other.member.api, admin: other.admin.api },
  ]);
  memberApp = client(server.url, { token: await accessTokenOf(tenant.member, ['openid', 'profile']) });
});

/** An access token of `person`'s, from a client of the person's organization that grants `scope`. */
async function accessTokenOf(person: { email: string }, scope: string[]): Promise<string> {
  const rp = await registerClient(tenant.admin.api, {
    name: 'Licensed app',
    redirect_uris: [REDIRECT],
    allowed_scopes: scope,
    consent_required: false,
  });
  const session = await sessionOf(server.url, person);
  const back = await authorize(server.url, session, {
    client_id: rp.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: scope.join(' '),
    state: 's',
  });
  const tokens = await exchangeCode(server.url, rp, codeFrom(back), REDIRECT);
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return tokens.body.access_token;
}
afterAll(() => server?.stop());

const check = (api: Client, query: string) => api.get(`/api/v1/licenses/check?${query}`);

describe('GET /api/v1/licenses/entitlements', () => {
  it('lists the licenses, entitlements and products of live seats in the organization the caller acts in', async () => {
    const reply = await tenant.member.api.get('/api/v1/licenses/entitlements');
    expect(reply.status).toBe(200);
    expectMatchesOpenApi('GET', '/api/v1/licenses/entitlements', reply);
    expect(reply.body).toEqual({
      licenses: ['crm', 'wiki'],
      entitlements: ['crm:reports', 'crm:export', 'wiki:edit'],
      products: [products.crm, products.wiki],
    });
  });

  it("is empty for a member without seats, and for another tenant's member", async () => {
    expect((await tenant.owner.api.get('/api/v1/licenses/entitlements')).body).toEqual({
      licenses: [],
      entitlements: [],
      products: [],
    });
    expect((await other.member.api.get('/api/v1/licenses/entitlements')).body.licenses).toEqual(['notes']);
  });

  it('follows seat changes at once', async () => {
    expect(
      (await tenant.admin.api.post(`/api/v1/subscriptions/${subscriptions.chat}/seats`, { user_id: tenant.owner.id }))
        .status,
    ).toBe(201);
    expect((await tenant.owner.api.get('/api/v1/licenses/entitlements')).body.licenses).toEqual(['chat']);
    expect(
      (await tenant.admin.api.delete(`/api/v1/subscriptions/${subscriptions.chat}/seats/${tenant.owner.id}`)).status,
    ).toBe(204);
    expect((await tenant.owner.api.get('/api/v1/licenses/entitlements')).body.licenses).toEqual([]);
  });

  it('answers 401 without credentials and 403 to an API key (it has no person)', async () => {
    const anon = await client(server.url).get('/api/v1/licenses/entitlements');
    expect(anon.status).toBe(401);
    expectMatchesOpenApi('GET', '/api/v1/licenses/entitlements', anon);
    const created = await tenant.admin.api.post('/api/v1/api-keys', { name: 'licenses' });
    const key = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    const refused = await key.get('/api/v1/licenses/entitlements');
    expect(refused.status).toBe(403);
    expectMatchesOpenApi('GET', '/api/v1/licenses/entitlements', refused);
    expect((await check(key, 'product=crm')).status).toBe(403);
  });
});

// Every outcome through both paths: a session token (the route table) and an access token (the direct path).
describe.each([
  ['a session token', () => tenant.member.api],
  ['an access token', () => memberApp],
])('GET /api/v1/licenses/check with %s', (_credential, caller) => {
  it.each([
    [
      'product=crm',
      {
        allowed: true,
        code: 'VALID',
        product: 'crm',
        feature: null,
        subscription: 'crm',
        status: 'active',
        expires_at: FUTURE,
      },
    ],
    [
      'product=crm&feature=reports',
      {
        allowed: true,
        code: 'VALID',
        product: 'crm',
        feature: 'reports',
        subscription: 'crm',
        status: 'active',
        expires_at: FUTURE,
      },
    ],
    [
      'entitlement=crm:export',
      {
        allowed: true,
        code: 'VALID',
        product: 'crm',
        feature: 'export',
        subscription: 'crm',
        status: 'active',
        expires_at: FUTURE,
      },
    ],
    [
      'entitlement=wiki:edit',
      {
        allowed: true,
        code: 'TRIAL',
        product: 'wiki',
        feature: 'edit',
        subscription: 'wiki',
        status: 'trial',
        expires_at: null,
      },
    ],
    [
      'product=crm&feature=billing',
      {
        allowed: false,
        code: 'FEATURE_MISSING',
        product: 'crm',
        feature: 'billing',
        subscription: null,
        status: null,
        expires_at: null,
      },
    ],
    [
      'product=chat',
      {
        allowed: false,
        code: 'NO_SEAT',
        product: 'chat',
        feature: null,
        subscription: 'chat',
        status: 'active',
        expires_at: null,
      },
    ],
    [
      'product=legacy',
      {
        allowed: false,
        code: 'CANCELLED',
        product: 'legacy',
        feature: null,
        subscription: 'legacy',
        status: 'cancelled',
        expires_at: null,
      },
    ],
    [
      'product=lapsed',
      {
        allowed: false,
        code: 'EXPIRED',
        product: 'lapsed',
        feature: null,
        subscription: 'lapsed',
        status: 'active',
        expires_at: PAST,
      },
    ],
    [
      'product=ended&feature=a',
      {
        allowed: false,
        code: 'EXPIRED',
        product: 'ended',
        feature: 'a',
        subscription: 'ended',
        status: 'expired',
        expires_at: null,
      },
    ],
    [
      'product=notes',
      {
        allowed: false,
        code: 'NO_SUBSCRIPTION',
        product: 'notes',
        feature: null,
        subscription: null,
        status: null,
        expires_at: null,
      },
    ],
    [
      'product=nothing-like-it',
      {
        allowed: false,
        code: 'UNKNOWN_PRODUCT',
        product: 'nothing-like-it',
        feature: null,
        subscription: null,
        status: null,
        expires_at: null,
      },
    ],
  ])('answers %s with its code', async (query, expected) => {
    const reply = await check(caller(), query);
    expect(reply.status).toBe(200);
    expectMatchesOpenApi('GET', `/api/v1/licenses/check?${query}`, reply);
    const { subscription, ...rest } = expected;
    expect(reply.body).toEqual({ ...rest, subscription_id: subscription ? subscriptions[subscription] : null });
  });

  it.each([
    ['nothing', ''],
    ['an empty product', 'product='],
    ['both product and entitlement', 'product=crm&entitlement=crm:reports'],
    ['an entitlement without a feature', 'entitlement=crm'],
    ['a feature beside an entitlement', 'entitlement=crm:reports&feature=export'],
    ['a repeated parameter', 'product=crm&product=wiki'],
    ['a NUL in the product', 'product=crm%00'],
    ['a product too long', `product=${'p'.repeat(64)}`],
  ])('answers 400 for %s', async (_label, query) => {
    const reply = await check(caller(), query);
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    expect(reply.body.error).toBe('invalid_request');
    expectMatchesOpenApi('GET', `/api/v1/licenses/check?${query}`, reply);
  });
});

describe('GET /api/v1/licenses/check', () => {
  it("answers for the caller: NO_SEAT for a colleague without the seat, VALID for another tenant's seat holder", async () => {
    expect((await check(tenant.owner.api, 'product=crm')).body.code).toBe('NO_SEAT');
    expect((await check(other.member.api, 'product=notes')).body.code).toBe('VALID');
    expect((await check(other.member.api, 'product=crm')).body.code).toBe('NO_SUBSCRIPTION');
  });

  it('is one SQL statement', async () => {
    const ctx = makeContext(
      server.base,
      { kind: 'user', userId: tenant.member.id, sessionId: 'counted', organizationId: tenant.id },
      { requestId: 'counted', ip: null, userAgent: null },
    );
    const statements: string[] = [];
    const stop = onStatement(server.base.db, (sql) => statements.push(sql));
    try {
      expect((await checkLicense(ctx, { product: 'crm', feature: 'reports' })).code).toBe('VALID');
    } finally {
      stop();
    }
    expect(statements).toHaveLength(1);
  });
});

describe('with an OAuth access token', () => {
  it("any valid token reads its user's licenses and checks them, whatever its scopes", async () => {
    const api = client(server.url, { token: await accessTokenOf(tenant.member, ['openid']) });
    const entitlements = await api.get('/api/v1/licenses/entitlements');
    expect(entitlements.status, JSON.stringify(entitlements.body)).toBe(200);
    expect(entitlements.body.licenses).toEqual(['crm', 'wiki']);
    const answer = await check(api, 'entitlement=crm:reports');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ allowed: true, code: 'VALID' });
  });
});
