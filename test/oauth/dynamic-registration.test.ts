// Dynamic client registration (RFC 7591) and its management (RFC 7592), docs/architecture.md#apps-without-secrets:
// an organization's admin makes an initial access token; an app registers itself with it through openid-client's
// dynamicClientRegistration, as a client library would, signs a person in with the client it got, and then reads,
// replaces and deletes its registration with its registration access token. Open registration is off.
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import { client as http, type Client } from '../helpers/http.ts';
import {
  accessTokenOf,
  authorize,
  codeFrom,
  decideConsent,
  registerClient as registerOAuthClient,
  startWithSignedInMember,
  type SignedInMember,
} from '../helpers/oauth.ts';
import { createTenant } from '../helpers/fixtures.ts';

const REDIRECT = 'https://agent.example.test/callback';

let setup: SignedInMember;
let orgAdmin: Client;
let issuer: URL;

beforeAll(async () => {
  setup = await startWithSignedInMember();
  orgAdmin = setup.tenant.admin.api;
  issuer = new URL(setup.server.url);
});
afterAll(() => setup?.server.stop());

async function initialToken(body: Record<string, unknown>, as: Client = orgAdmin) {
  const reply = await as.post('/api/v1/oauth-clients/registration-tokens', body);
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string; token: string; scopes: string[]; public: boolean };
}

const register = (token: string | undefined, metadata: Record<string, unknown>) =>
  http(setup.server.url).post('/oauth/register', metadata, token ? { authorization: `Bearer ${token}` } : {});

const allowInsecure = { execute: [oidc.allowInsecureRequests] };

describe('initial access tokens', () => {
  it('are made by admins, shown once, listed without the token, and deleted', async () => {
    const made = await orgAdmin.post('/api/v1/oauth-clients/registration-tokens', {
      name: 'Agents',
      scopes: ['openid', 'email'],
      public: true,
    });
    expect(made.status).toBe(201);
    expectMatchesOpenApi('post', '/api/v1/oauth-clients/registration-tokens', made);
    expect(made.body).toMatchObject({ name: 'Agents', scopes: ['openid', 'email'], public: true });
    expect(made.body.token).toMatch(/^tsit_/);
    const listed = await orgAdmin.get('/api/v1/oauth-clients/registration-tokens');
    expectMatchesOpenApi('get', '/api/v1/oauth-clients/registration-tokens', listed);
    const mine = listed.body.registration_tokens.find((t: { id: string }) => t.id === made.body.id);
    expect(mine).toMatchObject({ name: 'Agents', last_used_at: null });
    expect(mine).not.toHaveProperty('token');
    expect((await orgAdmin.delete(`/api/v1/oauth-clients/registration-tokens/${made.body.id}`)).status).toBe(204);
    expect((await register(made.body.token, { redirect_uris: [REDIRECT] })).status).toBe(401);
  });

  it('are refused to members, to another organization, and for a public client with api', async () => {
    const body = { name: 'x', scopes: ['openid'] };
    expect((await setup.tenant.member.api.post('/api/v1/oauth-clients/registration-tokens', body)).status).toBe(403);
    const other = await createTenant(setup.server.url, setup.admin);
    const theirs = await initialToken(body, other.admin.api);
    expect((await orgAdmin.delete(`/api/v1/oauth-clients/registration-tokens/${theirs.id}`)).status).toBe(404);
    const listed = await orgAdmin.get(`/api/v1/oauth-clients/registration-tokens?organization_id=${other.id}`);
    expect(listed.status).toBe(404);
    const bad = await orgAdmin.post('/api/v1/oauth-clients/registration-tokens', {
      name: 'x',
      scopes: ['api'],
      public: true,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ path: 'scopes', message: 'a public client cannot be granted api' }]);
    const unknown = await orgAdmin.post('/api/v1/oauth-clients/registration-tokens', {
      name: 'x',
      scopes: ['not a scope!'],
    });
    expect(unknown.status).toBe(400);
  });
});

describe('registration as openid-client does it', () => {
  it('registers a public client that signs a person in, and it is the organization’s', async () => {
    const { token } = await initialToken({
      name: 'Agents',
      scopes: ['openid', 'email', 'offline_access'],
      public: true,
    });
    const config = await oidc.dynamicClientRegistration(
      issuer,
      { redirect_uris: [REDIRECT], client_name: 'Notes agent', token_endpoint_auth_method: 'none' },
      oidc.None(),
      { initialAccessToken: token, ...allowInsecure },
    );
    const registered = config.clientMetadata();
    expect(registered.client_id).toMatch(/^tsc_/);
    expect(registered.client_secret).toBeUndefined();
    expect(registered).toMatchObject({
      client_name: 'Notes agent',
      token_endpoint_auth_method: 'none',
      scope: 'openid email offline_access',
      registration_client_uri: `${setup.server.url}/oauth/register/${registered.client_id}`,
    });
    expect(registered.registration_access_token).toMatch(/^tsrat_/);

    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: 'st',
    });
    // Registered by no one who vetted it: the person is asked.
    const consent = await authorize(setup.server.url, setup.session, url.searchParams);
    expect(consent.pathname).toBe('/consent');
    const back = await decideConsent(setup.server.url, setup.session, consent);
    codeFrom(back);
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: 'st' });
    expect(tokens.claims()?.email).toBe(setup.tenant.member.email);

    const listed = await orgAdmin.get('/api/v1/oauth-clients');
    expect(listed.body.oauth_clients.map((c: { client_id: string }) => c.client_id)).toContain(registered.client_id);
  });

  it('registers a confidential client with a secret, which authenticates at the token endpoint', async () => {
    const { token } = await initialToken({ name: 'Backends', scopes: ['openid', 'reports'] });
    const config = await oidc.dynamicClientRegistration(
      issuer,
      { redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'client_credentials'], scope: 'reports' },
      undefined,
      { initialAccessToken: token, ...allowInsecure },
    );
    const registered = config.clientMetadata();
    expect(registered.client_secret).toMatch(/^tscs_/);
    expect(registered.client_secret_expires_at).toBe(0);
    const machine = await oidc.clientCredentialsGrant(config, { scope: 'reports' });
    expect(machine.scope).toBe('reports');
  });
});

describe('refusals', () => {
  let publicToken: string;
  beforeAll(async () => {
    publicToken = (await initialToken({ name: 'Agents', scopes: ['openid', 'email'], public: true })).token;
  });

  it('without an initial access token: open registration is off (401 invalid_token)', async () => {
    const reply = await register(undefined, { redirect_uris: [REDIRECT] });
    expect(reply.status).toBe(401);
    expect(reply.body.error).toBe('invalid_token');
    expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer/);
    for (const bad of ['tsit_nope', 'x'.repeat(5000), 'tsrat_abc']) {
      const wrong = await register(bad, { redirect_uris: [REDIRECT] });
      expect(wrong.status, bad.slice(0, 10)).toBe(401);
    }
  });

  it("an app's access token, or a session's, is no initial access token", async () => {
    const redirect = 'https://tenant-app.example.test/cb';
    const app = await registerOAuthClient(orgAdmin, {
      name: 'Tenant app',
      redirect_uris: [redirect],
      allowed_scopes: ['openid', 'api'],
      consent_required: false,
    });
    const token = await accessTokenOf(setup.server.url, setup.tenant.admin, app, redirect, 'openid api');
    for (const bearer of [token, setup.session]) {
      const reply = await register(bearer, { redirect_uris: [REDIRECT] });
      expect(reply.status).toBe(401);
      expect(reply.body.error).toBe('invalid_token');
    }
  });

  it.each([
    [{ redirect_uris: ['http://evil.test/cb'] }, 'invalid_redirect_uri', 'redirect_uris.0'],
    [{ redirect_uris: ['https://a.test/cb#x'] }, 'invalid_redirect_uri', 'redirect_uris.0'],
    [{ redirect_uris: 'https://a.test/cb' }, 'invalid_client_metadata', 'redirect_uris'],
    [{ redirect_uris: [REDIRECT], scope: 'openid api' }, 'invalid_client_metadata', 'scope goes beyond'],
    [
      { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_post' },
      'invalid_client_metadata',
      'must be none',
    ],
    [
      { redirect_uris: [REDIRECT], grant_types: ['client_credentials'] },
      'invalid_client_metadata',
      'client_credentials',
    ],
    [{ redirect_uris: [REDIRECT], response_types: ['token'] }, 'invalid_client_metadata', 'response_types'],
    [{ redirect_uris: [REDIRECT], client_name: 'a\u0000b' }, 'invalid_client_metadata', 'NUL'],
    [{ redirect_uris: [REDIRECT], extra: { deep: ['\u0000'] } }, 'invalid_client_metadata', 'NUL'],
    [[REDIRECT], 'invalid_client_metadata', 'JSON object'],
  ])('%j: 400 %s', async (metadata, error, words) => {
    const reply = await register(publicToken, metadata as Record<string, unknown>);
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    expect(reply.body.error).toBe(error);
    expect(JSON.stringify(reply.body)).toContain(words);
  });

  it('a form body instead of JSON', async () => {
    const reply = await http(setup.server.url).post('/oauth/register', `redirect_uris=${REDIRECT}`, {
      authorization: `Bearer ${publicToken}`,
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe('invalid_client_metadata');
  });

  it('20 registrations at once with one token: 20 clients, each with its own registration access token', async () => {
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => register(publicToken, { redirect_uris: [REDIRECT], client_name: `n${i}` })),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(201));
    expect(new Set(replies.map((r) => r.body.client_id)).size).toBe(20);
    expect(new Set(replies.map((r) => r.body.registration_access_token)).size).toBe(20);
  });
});

describe('the registration, with its registration access token (RFC 7592)', () => {
  let registration: { client_id: string; registration_access_token: string; registration_client_uri: string };
  let other: typeof registration;
  const at = (r: typeof registration, token = r.registration_access_token) => ({
    get: () =>
      http(setup.server.url).get(new URL(r.registration_client_uri).pathname, { authorization: `Bearer ${token}` }),
    put: (body: Record<string, unknown>) =>
      http(setup.server.url).request('PUT', new URL(r.registration_client_uri).pathname, body, {
        authorization: `Bearer ${token}`,
      }),
    delete: () =>
      http(setup.server.url).delete(new URL(r.registration_client_uri).pathname, undefined, {
        authorization: `Bearer ${token}`,
      }),
  });

  beforeAll(async () => {
    const { token } = await initialToken({ name: 'Agents', scopes: ['openid', 'email', 'profile'], public: true });
    registration = (await register(token, { redirect_uris: [REDIRECT], client_name: 'First' })).body;
    other = (await register(token, { redirect_uris: [REDIRECT], client_name: 'Second' })).body;
  });

  it('reads it', async () => {
    const reply = await at(registration).get();
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      client_id: registration.client_id,
      client_name: 'First',
      scope: 'openid email profile',
    });
    expect(reply.body).not.toHaveProperty('client_secret');
  });

  it("refuses another client's token, a wrong one and none, alike (401)", async () => {
    for (const token of [other.registration_access_token, 'tsrat_wrong', '']) {
      const reply = await at(registration, token).get();
      expect(reply.status).toBe(401);
      expect(reply.body.error).toBe('invalid_token');
    }
  });

  it('replaces it: scopes may narrow but never widen, and the kind stays', async () => {
    const narrowed = await at(registration).put({
      client_id: registration.client_id,
      redirect_uris: [REDIRECT, 'https://agent.example.test/other'],
      client_name: 'Renamed',
      scope: 'openid',
    });
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect(narrowed.body).toMatchObject({ client_name: 'Renamed', scope: 'openid' });
    expect((await at(registration).get()).body.redirect_uris).toHaveLength(2);
    const widened = await at(registration).put({
      client_id: registration.client_id,
      redirect_uris: [REDIRECT],
      scope: 'openid email',
    });
    expect(widened.status).toBe(400);
    expect(widened.body.error).toBe('invalid_client_metadata');
    const otherId = await at(registration).put({ client_id: other.client_id, redirect_uris: [REDIRECT] });
    expect(otherId.status).toBe(400);
    const kind = await at(registration).put({
      client_id: registration.client_id,
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'client_secret_post',
    });
    expect(kind.status).toBe(400);
  });

  it('deletes it, after which the token reads nothing', async () => {
    expect((await at(other).delete()).status).toBe(204);
    expect((await at(other).get()).status).toBe(401);
    const listed = await orgAdmin.get('/api/v1/oauth-clients');
    expect(listed.body.oauth_clients.map((c: { client_id: string }) => c.client_id)).not.toContain(other.client_id);
  });
});

describe('discovery', () => {
  it('names the registration endpoint', async () => {
    const reply = await http(setup.server.url).get('/.well-known/oauth-authorization-server');
    expect(reply.body.registration_endpoint).toBe(`${setup.server.url}/oauth/register`);
  });
});
