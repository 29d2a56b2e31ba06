// The licence check asked with an access token, as apps ask it: authentication and the check in one statement,
// which also leases requests from the organization's rate-limit counter when the process holds none
// (server/rest/licenses.ts, licenses.service checkLicenseWithAccessToken), answering like the route table would:
// the same headers, the same 401, 403 and 429, and nothing counted for a token that no longer stands. The
// outcomes themselves are compared across both paths in licenses.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onStatement } from '../../schema/db.ts';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { movableClock } from '../helpers/clock.ts';
import { authorize, codeFrom, exchangeCode, registerClient, sessionOf, tokenRequest } from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/callback';
const LIMIT = 30;
const clock = movableClock();
let server: TestServer;
let platform: Client;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer({ clock, env: { RATE_LIMIT_ORGANIZATION_PER_HOUR: String(LIMIT) } });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, platform);
  const product = await platform.post('/v1/products', { name: 'CRM', slug: 'crm', features: ['reports'] });
  const subscription = await platform.post('/api/v1/subscriptions', {
    organization_id: tenant.id,
    product_id: product.body.id,
    total_seats: 2,
    price_per_seat: 5,
    billing_cycle: 'monthly',
    status: 'active',
  });
  expect(
    (await tenant.admin.api.post(`/api/v1/subscriptions/${subscription.body.id}/seats`, { user_id: tenant.member.id }))
      .status,
  ).toBe(201);
});
afterAll(() => server?.stop());

/** A fresh hour of the organization's limit: the counter's window has passed. */
const newWindow = () => clock.advance(3601);

async function memberToken(person: Person = tenant.member): Promise<string> {
  const rp = await registerClient(tenant.admin.api, {
    name: 'App',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid'],
    consent_required: false,
  });
  const back = await authorize(server.url, await sessionOf(server.url, person), {
    client_id: rp.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    state: 's',
  });
  const tokens = await exchangeCode(server.url, rp, codeFrom(back), REDIRECT);
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return tokens.body.access_token;
}

const check = (token: string, query = 'entitlement=crm:reports') =>
  client(server.url, { token }).get(`/api/v1/licenses/check?${query}`);

/** What the organization's counter stands at, read through a route that counts too (so one more). */
async function remainingAfterOneMore(): Promise<number> {
  const reply = await tenant.owner.api.get('/api/v1/users/me');
  return Number(reply.headers.get('ratelimit-remaining'));
}

describe('GET /api/v1/licenses/check with an access token', () => {
  it('is one SQL statement for the whole request, authentication and rate-limit count included', async () => {
    newWindow();
    const token = await memberToken();
    const statements: string[] = [];
    const stop = onStatement(server.base.db, (sql) => statements.push(sql));
    let reply;
    try {
      reply = await check(token);
    } finally {
      stop();
    }
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({ allowed: true, code: 'VALID', product: 'crm', feature: 'reports' });
    expect(statements, statements.join('\n---\n')).toHaveLength(1);
  });

  it('counts each check once against the organization, with the headers of every route, and answers 429 past the limit', async () => {
    newWindow();
    const token = await memberToken();
    const first = await check(token);
    expect(first.headers.get('ratelimit-policy')).toBe(`${LIMIT};w=3600`);
    expect(first.headers.get('ratelimit-limit')).toBe(String(LIMIT));
    expect(first.headers.get('cache-control')).toBe('no-store');
    const remaining = Number(first.headers.get('ratelimit-remaining'));
    expect(first.headers.get('ratelimit')).toMatch(new RegExp(`^limit=${LIMIT}, remaining=${remaining}, reset=\\d+$`));
    expect(Number((await check(token)).headers.get('ratelimit-remaining'))).toBe(remaining - 1);
    // Shared with the organization's other callers: the session route sees the checks, and they see it.
    expect(await remainingAfterOneMore()).toBe(remaining - 2);

    const statuses: number[] = [];
    for (let i = 0; i < remaining - 2; i++) statuses.push((await check(token)).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    const over = await check(token);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({
      error: 'rate_limited',
      error_description: `Rate limit exceeded: ${LIMIT} requests an hour per organization`,
    });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(over.headers.get('ratelimit-remaining')).toBe('0');
    newWindow(); // the token's hour has passed too
    expect((await check(await memberToken())).status).toBe(200);
  });

  it('answers 401 to a token whose grant no longer stands, and counts nothing for it', async () => {
    newWindow();
    const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'mover');
    const token = await memberToken(person);
    expect((await check(token)).body.code).toBe('NO_SEAT');
    // A new password ends every token issued before it.
    const changed = await person.api.patch('/api/v1/users/me', {
      current_password: PASSWORD,
      password: 'a brand new password',
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    const before = await remainingAfterOneMore();
    const refused = await check(token);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_token');
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect(refused.headers.get('ratelimit-policy')).toBeNull();
    expect(await remainingAfterOneMore()).toBe(before - 1);
  });

  it('answers 401 to a token with a signature of its own', async () => {
    const token = await memberToken();
    const [header, payload] = token.split('.');
    const reply = await check(`${header}.${payload}.${Buffer.from('not our signature').toString('base64url')}`);
    expect(reply.status).toBe(401);
    expect(reply.body.error).toBe('invalid_token');
  });

  it("answers 403 to a machine client's token (no person to hold a seat), after counting it like the route table", async () => {
    newWindow();
    const machine = await registerClient(tenant.admin.api, {
      name: 'Machine',
      grant_types: ['client_credentials'],
      allowed_scopes: ['openid'],
    });
    const tokens = await tokenRequest(server.url, {
      grant_type: 'client_credentials',
      client_id: machine.client_id,
      client_secret: machine.client_secret,
    });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    const direct = await check(tokens.body.access_token);
    const general = await client(server.url, { token: tokens.body.access_token }).get('/api/v1/licenses/entitlements');
    expect(direct.status).toBe(403);
    expect(direct.body).toEqual(general.body);
    expect(Number(direct.headers.get('ratelimit-remaining'))).toBe(
      Number(general.headers.get('ratelimit-remaining')) + 1,
    );
  });
});
