// Negative cases of GET /oauth/userinfo, after the OpenID Foundation's Basic OP plan: a missing, expired,
// tampered, unsigned, HMAC-forged, wrong-type or revoked access token answers 401 invalid_token with
// WWW-Authenticate: Bearer; the same tokens are refused by the REST interface too.
import { randomBytes } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { client as restClient, type Client, type Reply } from '../helpers/http.ts';
import type { Tenant } from '../helpers/fixtures.ts';
import { movableClock } from '../helpers/clock.ts';
import {
  authorize,
  codeFrom,
  exchangeCode,
  registerClient,
  startWithSignedInMember,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://app.example.test/callback';

interface Tokens {
  access_token: string;
  id_token: string;
  refresh_token?: string;
}

const clock = movableClock();
let server: TestServer;
let admin: Client;
let tenant: Tenant;
/** A session token of tenant.member, sent as the portal's cookie. */
let session: string;
let app: RegisteredClient;
/** A valid token set of `app` for tenant.member, the raw material of the forgeries below. */
let valid: Tokens;

/** A client of the tenant, registered by the platform admin, that skips consent. */
const registerApp = (body: Record<string, unknown> = {}) =>
  registerClient(admin, {
    name: 'Relying party',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'profile', 'email'],
    consent_required: false,
    organization_id: tenant.id,
    ...body,
  });

/** The whole code flow as tenant.member: authorize with the session cookie, then exchange the code. */
async function tokensFor(c: RegisteredClient = app): Promise<Tokens> {
  const location = await authorize(server.url, session, {
    client_id: c.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid profile email',
    state: randomBytes(6).toString('hex'),
    nonce: randomBytes(6).toString('hex'),
  });
  const reply = await exchangeCode(server.url, c, codeFrom(location), REDIRECT);
  if (reply.status !== 200) throw new Error(`token exchange failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember({ clock }));
  app = await registerApp();
  valid = await tokensFor();
});
afterAll(() => server?.stop());

const userinfo = (token: string | null) =>
  restClient(server.url).get('/oauth/userinfo', token === null ? {} : { authorization: `Bearer ${token}` });
const usersMe = (token: string) => restClient(server.url, { token }).get('/api/v1/users/me');

/** userinfo: 401 invalid_token "Access token is invalid or expired" with a Bearer challenge, and no claims. */
function expectInvalidToken(reply: Reply) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(401);
  expect(reply.body).toEqual({ error: 'invalid_token', error_description: 'Access token is invalid or expired' });
  expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
  expect(reply.headers.get('www-authenticate')).toContain('invalid_token');
  expect(reply.headers.get('cache-control')).toContain('no-store');
}

/** The same token is refused on userinfo and on a REST endpoint. */
async function expectRejectedEverywhere(token: string) {
  expectInvalidToken(await userinfo(token));
  const rest = await usersMe(token);
  expect(rest.status, JSON.stringify(rest.body)).toBe(401);
  expect(rest.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
  expect(rest.body.error).toBe('invalid_token');
  expect(rest.body.id).toBeUndefined();
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('a valid access token (control)', () => {
  it('is accepted by userinfo and by the REST interface', async () => {
    const info = await userinfo(valid.access_token);
    expect(info.status).toBe(200);
    expect(info.body.sub).toBe(tenant.member.id);
    const me = await usersMe(valid.access_token);
    expect(me.status).toBe(200);
  });
});

describe('GET /oauth/userinfo refuses', () => {
  it('a request without a token: 401 invalid_token with WWW-Authenticate: Bearer', async () => {
    const reply = await userinfo(null);
    expect(reply.status).toBe(401);
    expect(reply.body.error).toBe('invalid_token');
    expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
  });

  it('a non-Bearer Authorization header', async () => {
    const reply = await restClient(server.url).get('/oauth/userinfo', {
      authorization: `Basic ${Buffer.from('a:b').toString('base64')}`,
    });
    expect(reply.status).toBe(401);
    expect(reply.body.error).toBe('invalid_token');
    expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
  });

  it('a tampered token (one payload character changed)', async () => {
    const [header, payload, signature] = valid.access_token.split('.') as [string, string, string];
    const i = Math.floor(payload.length / 2);
    const flipped = payload[i] === 'A' ? 'B' : 'A';
    const tampered = `${header}.${payload.slice(0, i)}${flipped}${payload.slice(i + 1)}.${signature}`;
    expect(tampered).not.toBe(valid.access_token);
    await expectRejectedEverywhere(tampered);
  });

  it('a token with changed claims and the original signature', async () => {
    const [header, payload, signature] = valid.access_token.split('.') as [string, string, string];
    const claims = decodeJwt(valid.access_token);
    const forged = `${header}.${b64({ ...claims, scope: `${claims.scope as string} organization`, sub: tenant.owner.id })}.${signature}`;
    expect(forged.split('.')[1]).not.toBe(payload);
    await expectRejectedEverywhere(forged);
  });

  it('an unsigned token (alg none)', async () => {
    const claims = decodeJwt(valid.access_token);
    const unsigned = `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64(claims)}.`;
    await expectRejectedEverywhere(unsigned);
  });

  it('an unsigned token that keeps our kid (alg none)', async () => {
    const { kid } = decodeProtectedHeader(valid.access_token);
    const claims = decodeJwt(valid.access_token);
    await expectRejectedEverywhere(`${b64({ alg: 'none', typ: 'at+jwt', kid })}.${b64(claims)}.`);
  });

  it('a token signed HS256 with a guessed secret, typ at+jwt, the same claims', async () => {
    const claims = decodeJwt(valid.access_token);
    const { kid } = decodeProtectedHeader(valid.access_token);
    for (const guess of ['secret', app.client_secret]) {
      const forged = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid })
        .sign(new TextEncoder().encode(guess));
      await expectRejectedEverywhere(forged);
    }
  });

  it('an ID token (typ JWT) presented as an access token', async () => {
    expect(decodeProtectedHeader(valid.id_token).typ).toBe('JWT');
    await expectRejectedEverywhere(valid.id_token);
  });

  it('a refresh token presented as an access token', async () => {
    expect(valid.refresh_token).toBeTruthy();
    await expectRejectedEverywhere(valid.refresh_token!);
  });

  it('a token of a client that was disabled since', async () => {
    const doomed = await registerApp({ name: 'Soon disabled' });
    const tokens = await tokensFor(doomed);
    expect((await userinfo(tokens.access_token)).status).toBe(200);
    expect((await admin.patch(`/api/v1/oauth-clients/${doomed.id}`, { enabled: false })).status).toBe(200);
    await expectRejectedEverywhere(tokens.access_token);
  });

  // Last: it moves the clock past the lifetime of every token issued so far.
  it('an expired token (3601 seconds later): "Access token is invalid or expired"', async () => {
    const tokens = await tokensFor();
    expect((await userinfo(tokens.access_token)).status).toBe(200);
    clock.advance(3601);
    try {
      await expectRejectedEverywhere(tokens.access_token);
    } finally {
      clock.advance(-3601);
    }
  });
});
