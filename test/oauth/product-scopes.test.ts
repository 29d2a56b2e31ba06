// Issue 8 item 5: a product slug is a scope, granted at /oauth/authorize only to a user holding that license in the
// client's organization; a refresh after the license is gone drops it; userinfo (and the ID token) show products,
// licenses and entitlements; discovery lists the product scopes; client_credentials never grants `api` by default,
// nor a product scope at all; a consent decision re-checks the membership. Products, subscriptions and seats are
// made over REST, as in use.
import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onStatement } from '../../schema/db.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Client } from '../helpers/http.ts';
import { addPerson, type Person, type Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  decideConsent,
  exchangeCode,
  registerClient,
  sessionOf,
  startWithSignedInMember,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/cb';
const ANALYTICS = { name: 'Acme Analytics', slug: 'acme-analytics', features: ['reports', 'export'] };
const BILLING = { name: 'Acme Billing', slug: 'acme-billing', features: ['invoices'] };
let server: TestServer;
let admin: Client;
let tenant: Tenant;
let session: string;
let app: RegisteredClient;
let analyticsId: string;
let billingId: string;
let analyticsSubscription: string;

async function product(body: typeof ANALYTICS): Promise<string> {
  const reply = await admin.post('/v1/products', body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body.id;
}

async function subscribe(productId: string): Promise<string> {
  const reply = await admin.post('/api/v1/subscriptions', {
    organization_id: tenant.id,
    product_id: productId,
    total_seats: 10,
    price_per_seat: 5,
    billing_cycle: 'monthly',
    status: 'active',
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body.id;
}

const seat = async (subscriptionId: string, person: Person) =>
  expect(
    (await tenant.admin.api.post(`/api/v1/subscriptions/${subscriptionId}/seats`, { user_id: person.id })).status,
  ).toBe(201);

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember());
  [analyticsId, billingId] = [await product(ANALYTICS), await product(BILLING)];
  analyticsSubscription = await subscribe(analyticsId);
  const billingSubscription = await subscribe(billingId);
  await seat(analyticsSubscription, tenant.member);
  await seat(billingSubscription, tenant.member);
  app = await registerClient(admin, {
    name: 'Licensed app',
    redirect_uris: [REDIRECT],
    consent_required: false,
    organization_id: tenant.id,
    allowed_scopes: ['openid', 'email', 'profile', 'organization', 'acme-analytics', 'acme-billing', 'no-such-product'],
  });
});
afterAll(() => server?.stop());

const authorizeAs = (browser: string, scope: string, c: RegisteredClient = app) =>
  authorize(server.url, browser, {
    client_id: c.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope,
    state: 'st',
  });

async function tokensFor(browser: string, scope: string) {
  const tokens = await exchangeCode(server.url, app, codeFrom(await authorizeAs(browser, scope)), REDIRECT);
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return tokens.body as { access_token: string; refresh_token: string; id_token?: string; scope: string };
}

const userinfo = async (accessToken: string) => {
  const reply = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
  expect(reply.status).toBe(200);
  return reply.json();
};
const refresh = (token: string, scope?: string) =>
  tokenRequest(server.url, {
    grant_type: 'refresh_token',
    refresh_token: token,
    client_id: app.client_id,
    client_secret: app.client_secret,
    ...(scope ? { scope } : {}),
  });
const analyticsClaim = () => ({
  id: analyticsId,
  slug: 'acme-analytics',
  name: 'Acme Analytics',
  features: ['reports', 'export'],
});

describe('discovery', () => {
  it('lists the product scopes beside the standard ones', async () => {
    // First in the file: the product list is read on the first discovery request (then kept briefly).
    const reply = await fetch(`${server.url}/.well-known/openid-configuration`);
    expect(reply.status).toBe(200);
    const { scopes_supported: scopes } = await reply.json();
    expect(scopes).toEqual(
      expect.arrayContaining([
        'openid',
        'profile',
        'email',
        'organization',
        'offline_access',
        'api',
        'acme-analytics',
        'acme-billing',
      ]),
    );
  });
});

describe('a user with a seat', () => {
  it('is granted the product scope; userinfo and the ID token show that product only', async () => {
    const tokens = await tokensFor(session, 'openid email acme-analytics');
    expect(tokens.scope.split(' ')).toEqual(['openid', 'email', 'acme-analytics']);
    expect(decodeJwt(tokens.access_token).scope).toBe('openid email acme-analytics');
    const expected = {
      products: [analyticsClaim()],
      licenses: ['acme-analytics'],
      entitlements: ['acme-analytics:reports', 'acme-analytics:export'],
    };
    expect(await userinfo(tokens.access_token)).toEqual({
      sub: tenant.member.id,
      email: tenant.member.email,
      email_verified: expect.any(Boolean),
      ...expected,
    });
    expect(decodeJwt(tokens.id_token!)).toMatchObject(expected);
  });

  it('with the organization scope: every license the user holds in the organization, with the organization fields', async () => {
    const tokens = await tokensFor(session, 'openid organization');
    const info = await userinfo(tokens.access_token);
    expect(info).toMatchObject({ organization_id: tenant.id, organization_name: tenant.name, role: 'member' });
    expect(info.licenses).toEqual(['acme-analytics', 'acme-billing']);
    expect(info.entitlements).toEqual(['acme-analytics:reports', 'acme-analytics:export', 'acme-billing:invoices']);
    expect(info.products).toEqual([analyticsClaim(), { id: billingId, ...BILLING }]);
  });

  it('without organization or product scopes: no license claims', async () => {
    const info = await userinfo((await tokensFor(session, 'openid profile')).access_token);
    expect(info).not.toHaveProperty('licenses');
    expect(info).not.toHaveProperty('products');
    expect(info).not.toHaveProperty('entitlements');
  });

  it('authorize with a product scope stays within 3 statements, userinfo within 1', async () => {
    await authorizeAs(session, 'openid acme-analytics'); // warm
    const statements: string[] = [];
    const stop = onStatement(server.base.db, (sql) => statements.push(sql));
    let location: URL;
    try {
      location = await authorizeAs(session, 'openid acme-analytics');
    } finally {
      stop();
    }
    expect(codeFrom(location)).toMatch(/^tsa_/);
    expect(statements.length, statements.join('\n---\n')).toBeLessThanOrEqual(3);

    const tokens = await exchangeCode(
      server.url,
      app,
      codeFrom(await authorizeAs(session, 'openid organization acme-analytics')),
      REDIRECT,
    );
    const counted: string[] = [];
    const stopAgain = onStatement(server.base.db, (sql) => counted.push(sql));
    try {
      expect((await userinfo(tokens.body.access_token)).licenses).toEqual(['acme-analytics', 'acme-billing']);
    } finally {
      stopAgain();
    }
    expect(counted.length, counted.join('\n---\n')).toBe(1);
  });
});

describe('a user without a seat', () => {
  it('gets invalid_scope at authorize, sent back to the client', async () => {
    const location = await authorizeAs(await sessionOf(server.url, tenant.admin), 'openid acme-analytics');
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get('error')).toBe('invalid_scope');
    expect(location.searchParams.get('error_description')).toBe('Requested scope not allowed');
    expect(location.searchParams.get('state')).toBe('st');
    expect(location.searchParams.get('code')).toBeNull();
  });

  it('a scope the client allows but no product has: invalid_scope too', async () => {
    const location = await authorizeAs(session, 'openid no-such-product');
    expect(location.searchParams.get('error')).toBe('invalid_scope');
  });

  it('a seat on a cancelled subscription is no license', async () => {
    const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'cancelled');
    const subscription = await subscribe(analyticsId);
    await seat(subscription, person);
    expect((await admin.patch(`/api/v1/subscriptions/${subscription}`, { status: 'cancelled' })).status).toBe(200);
    const location = await authorizeAs(await sessionOf(server.url, person), 'openid acme-analytics');
    expect(location.searchParams.get('error')).toBe('invalid_scope');
  });
});

describe('a refresh after the seat was removed', () => {
  it('drops the product scope from the new tokens and from the stored refresh token', async () => {
    const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'unseated');
    await seat(analyticsSubscription, person);
    const tokens = await tokensFor(await sessionOf(server.url, person), 'openid email acme-analytics');
    expect(tokens.scope).toBe('openid email acme-analytics');
    const kept = await refresh(tokens.refresh_token);
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body.scope).toBe('openid email acme-analytics');

    expect(
      (await tenant.admin.api.delete(`/api/v1/subscriptions/${analyticsSubscription}/seats/${person.id}`)).status,
    ).toBe(204);
    const dropped = await refresh(kept.body.refresh_token);
    expect(dropped.status, JSON.stringify(dropped.body)).toBe(200);
    expect(dropped.body.scope).toBe('openid email');
    expect(decodeJwt(dropped.body.access_token).scope).toBe('openid email');
    expect(decodeJwt(dropped.body.id_token)).not.toHaveProperty('licenses');
    const stored = await server.base.db.refreshToken.findUnique({
      where: { tokenHash: createHash('sha256').update(dropped.body.refresh_token).digest('hex') },
    });
    expect(stored!.scope).toBe('openid email');
    expect(await userinfo(dropped.body.access_token)).not.toHaveProperty('licenses');
    // The old access token still names the scope, but userinfo shows only licenses held now.
    expect((await userinfo(kept.body.access_token)).licenses).toEqual([]);
    // Asking for it back is asking for more than the refresh token carries.
    const again = await refresh(dropped.body.refresh_token, 'openid acme-analytics');
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_scope');
  });

  it('a narrower refresh that names the product: issued without it once the seat is gone, in the order asked, and the refresh token kept drops it too', async () => {
    const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'narrowed');
    await seat(analyticsSubscription, person);
    const tokens = await tokensFor(await sessionOf(server.url, person), 'openid email acme-analytics');
    const seated = await refresh(tokens.refresh_token, 'acme-analytics openid');
    expect(seated.status, JSON.stringify(seated.body)).toBe(200);
    expect(seated.body.scope).toBe('acme-analytics openid');
    expect(decodeJwt(seated.body.id_token).licenses).toEqual(['acme-analytics']);

    expect(
      (await tenant.admin.api.delete(`/api/v1/subscriptions/${analyticsSubscription}/seats/${person.id}`)).status,
    ).toBe(204);
    // Within the refresh token's scope, so not refused; but the license is gone, so not issued either.
    const unseated = await refresh(seated.body.refresh_token, 'acme-analytics openid');
    expect(unseated.status, JSON.stringify(unseated.body)).toBe(200);
    expect(unseated.body.scope).toBe('openid');
    expect(decodeJwt(unseated.body.access_token).scope).toBe('openid');
    expect(decodeJwt(unseated.body.id_token)).not.toHaveProperty('licenses');
    const stored = await server.base.db.refreshToken.findUnique({
      where: { tokenHash: createHash('sha256').update(unseated.body.refresh_token).digest('hex') },
    });
    expect(stored!.scope).toBe('openid email');
  });
});

describe('a client that may be granted plain scopes only', () => {
  const redeeming = (statements: string[]) =>
    statements.filter((sql) => /update (authorization_codes|refresh_tokens) set used_at/.test(sql));

  it('authorizes, redeems its codes and refreshes without looking up licenses, with the same tokens', async () => {
    const plain = await registerClient(admin, {
      name: 'Plain app',
      redirect_uris: [REDIRECT],
      consent_required: false,
      organization_id: tenant.id,
      allowed_scopes: ['openid', 'email', 'profile', 'offline_access'],
    });
    const statements: string[] = [];
    const stop = onStatement(server.base.db, (sql) => statements.push(sql));
    let tokens, refreshed;
    try {
      const code = codeFrom(await authorizeAs(session, 'openid email offline_access', plain));
      tokens = await exchangeCode(server.url, plain, code, REDIRECT);
      refreshed = await tokenRequest(server.url, {
        grant_type: 'refresh_token',
        refresh_token: tokens.body.refresh_token,
        client_id: plain.client_id,
        client_secret: plain.client_secret,
      });
    } finally {
      stop();
    }
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(redeeming(statements)).toHaveLength(2);
    for (const sql of statements) expect(sql).not.toMatch(/seat_assignments|from products/);
    expect(refreshed.body.scope).toBe('openid email offline_access');
    const idToken = decodeJwt(refreshed.body.id_token);
    expect(idToken.email).toBe(tenant.member.email);
    expect(idToken).not.toHaveProperty('licenses');
  });

  it('a token granted before its scopes were narrowed is redeemed as before: the product scope and its license stay', async () => {
    const narrowed = await registerClient(admin, {
      name: 'Narrowed app',
      redirect_uris: [REDIRECT],
      consent_required: false,
      organization_id: tenant.id,
      allowed_scopes: ['openid', 'email', 'offline_access', 'acme-analytics'],
    });
    const code = codeFrom(await authorizeAs(session, 'openid email offline_access acme-analytics', narrowed));
    const first = await exchangeCode(server.url, narrowed, code, REDIRECT);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const later = codeFrom(await authorizeAs(session, 'openid acme-analytics', narrowed));
    const patched = await tenant.admin.api.patch(`/api/v1/oauth-clients/${narrowed.id}`, {
      allowed_scopes: ['openid', 'email', 'offline_access'],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);

    const exchanged = await exchangeCode(server.url, narrowed, later, REDIRECT);
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
    expect(exchanged.body.scope).toBe('openid acme-analytics');
    expect(decodeJwt(exchanged.body.id_token).licenses).toEqual(['acme-analytics']);
    // Twice: the second request finds the client remembered with its plain scopes, misses, and is answered after a fresh read.
    let token = first.body.refresh_token;
    for (let i = 0; i < 2; i++) {
      const refreshed = await tokenRequest(server.url, {
        grant_type: 'refresh_token',
        refresh_token: token,
        client_id: narrowed.client_id,
        client_secret: narrowed.client_secret,
      });
      expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
      expect(refreshed.body.scope).toBe('openid email offline_access acme-analytics');
      expect(decodeJwt(refreshed.body.id_token).licenses).toEqual(['acme-analytics']);
      token = refreshed.body.refresh_token;
    }
  });
});

describe('client_credentials', () => {
  it('without a scope parameter: everything allowed but api; api only when asked for', async () => {
    const machine = await registerClient(admin, {
      name: 'Machine',
      grant_types: ['client_credentials'],
      allowed_scopes: ['api', 'organization'],
      organization_id: tenant.id,
    });
    const ask = (scope?: string) =>
      tokenRequest(server.url, {
        grant_type: 'client_credentials',
        client_id: machine.client_id,
        client_secret: machine.client_secret,
        ...(scope ? { scope } : {}),
      });
    const plain = await ask();
    expect(plain.status, JSON.stringify(plain.body)).toBe(200);
    expect(plain.body.scope.split(' ')).not.toContain('api');
    expect(decodeJwt(plain.body.access_token).scope).toBe('organization');
    const asked = await ask('api');
    expect(asked.status).toBe(200);
    expect(asked.body.scope).toBe('api');
  });

  it('never grants a product scope: a machine holds no license, even when the client may ask for it', async () => {
    const machine = await registerClient(admin, {
      name: 'Machine with a product',
      grant_types: ['client_credentials'],
      allowed_scopes: ['organization', ANALYTICS.slug],
      organization_id: tenant.id,
    });
    const ask = (scope?: string) =>
      tokenRequest(server.url, {
        grant_type: 'client_credentials',
        client_id: machine.client_id,
        client_secret: machine.client_secret,
        ...(scope ? { scope } : {}),
      });
    const plain = await ask();
    expect(plain.status, JSON.stringify(plain.body)).toBe(200);
    expect(decodeJwt(plain.body.access_token).scope).toBe('organization');
    const asked = await ask(`organization ${ANALYTICS.slug}`);
    expect(asked.status).toBe(400);
    expect(asked.body).toEqual({ error: 'invalid_scope', error_description: 'Requested scope not allowed' });
  });
});

describe('a consent decision', () => {
  it('after the user left the organization: no code, invalid_client back to the client, nothing remembered', async () => {
    const consenting = await registerClient(admin, {
      name: 'Asks first',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      organization_id: tenant.id,
    });
    const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'leaving');
    const browser = await sessionOf(server.url, person);
    const page = await authorizeAs(browser, 'openid', consenting);
    expect(page.pathname).toBe('/consent');
    expect((await tenant.owner.api.delete(`/v1/organizations/${tenant.id}/members/${person.id}`)).status).toBe(204);

    const back = await decideConsent(server.url, browser, page);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('invalid_client');
    expect(back.searchParams.get('code')).toBeNull();
    expect(await server.base.db.oAuthConsent.count({ where: { userId: person.id } })).toBe(0);
    expect(await server.base.db.oAuthGrant.count({ where: { userId: person.id } })).toBe(0);
  });
});
