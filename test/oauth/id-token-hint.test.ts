// id_token_hint is verified, at the authorization endpoint as at logout, by the one verifier: an ID token of ours
// (signature, issuer, typ JWT) issued to the client. An access token is not an ID token and is refused at both.
import { SignJWT, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { client as restClient, type Client } from '../helpers/http.ts';
import type { Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  browserGet,
  codeFrom,
  exchangeCode,
  registerClient,
  sessionOf,
  startWithSignedInMember,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/cb';
const POST_LOGOUT = 'https://rp.example.test/bye';
let server: TestServer;
let admin: Client;
let tenant: Tenant;
let session: string;
let app: RegisteredClient;
let other: RegisteredClient;
/** The member's tokens from `app`. */
let tokens: { id_token: string; access_token: string };

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember());
  const body = {
    redirect_uris: [REDIRECT],
    post_logout_redirect_uris: [POST_LOGOUT],
    allowed_scopes: ['openid', 'email'],
    consent_required: false,
    organization_id: tenant.id,
  };
  app = await registerClient(admin, { ...body, name: 'App' });
  other = await registerClient(admin, { ...body, name: 'Other app' });
  tokens = await tokensOf(app, session);
});
afterAll(() => server?.stop());

async function tokensOf(c: RegisteredClient, browser: string) {
  const location = await authorize(server.url, browser, {
    client_id: c.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid email',
    nonce: 'n',
  });
  const reply = await exchangeCode(server.url, c, codeFrom(location), REDIRECT);
  expect(reply.status).toBe(200);
  return reply.body as { id_token: string; access_token: string };
}

const withHint = (hint: string, extra: Record<string, string> = {}) =>
  authorize(server.url, session, {
    client_id: app.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    state: 'st',
    id_token_hint: hint,
    ...extra,
  });

function expectRefused(location: URL, description: string) {
  expect(location.origin + location.pathname).toBe(REDIRECT);
  expect(location.searchParams.get('error')).toBe('invalid_request');
  expect(location.searchParams.get('error_description')).toBe(description);
  expect(location.searchParams.get('code')).toBeNull();
  expect(location.searchParams.get('state')).toBe('st');
}

describe('id_token_hint at /oauth/authorize', () => {
  it("the signed-in user's own ID token: a code", async () => {
    codeFrom(await withHint(tokens.id_token));
  });

  it("another user's ID token: sign in again (or login_required with prompt=none)", async () => {
    const theirs = await tokensOf(app, await sessionOf(server.url, tenant.admin));
    expect((await withHint(theirs.id_token)).pathname).toBe('/login');
    const none = await withHint(theirs.id_token, { prompt: 'none' });
    expect(none.searchParams.get('error')).toBe('login_required');
  });

  it('an access token of the same user is not an ID token: invalid_request', async () => {
    expectRefused(await withHint(tokens.access_token), 'id_token_hint is not a valid ID token from this issuer');
  });

  it('an ID token signed by someone else, or no JWT at all: invalid_request', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const payload = JSON.parse(Buffer.from(tokens.id_token.split('.')[1]!, 'base64url').toString());
    const forged = await new SignJWT(payload).setProtectedHeader({ alg: 'RS256', typ: 'JWT' }).sign(privateKey);
    expectRefused(await withHint(forged), 'id_token_hint is not a valid ID token from this issuer');
    expectRefused(await withHint('not-a-jwt'), 'id_token_hint is not a valid ID token from this issuer');
  });

  it("another client's ID token: invalid_request", async () => {
    const theirs = await tokensOf(other, session);
    expectRefused(await withHint(theirs.id_token), 'id_token_hint was issued to another client');
  });
});

describe('id_token_hint at /oauth/logout', () => {
  it('an access token is refused with an error page, and the session goes on', async () => {
    const browser = await sessionOf(server.url, tenant.member);
    const mine = await tokensOf(app, browser);
    const query = new URLSearchParams({
      id_token_hint: mine.access_token,
      post_logout_redirect_uri: POST_LOGOUT,
      state: 'x',
    });
    const res = await browserGet(`${server.url}/oauth/logout?${query}`, browser);
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('id_token_hint is not a valid ID token from this issuer');
    expect((await restClient(server.url, { token: browser }).get('/api/v1/users/me')).status).toBe(200);
  });

  it('the ID token of the same sign-in ends the session at once (control)', async () => {
    const browser = await sessionOf(server.url, tenant.member);
    const mine = await tokensOf(app, browser);
    const query = new URLSearchParams({
      id_token_hint: mine.id_token,
      post_logout_redirect_uri: POST_LOGOUT,
      state: 'x',
    });
    const res = await browserGet(`${server.url}/oauth/logout?${query}`, browser);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${POST_LOGOUT}?state=x`);
    expect((await restClient(server.url, { token: browser }).get('/api/v1/users/me')).status).toBe(401);
  });
});
