// Public clients (RFC 6749 2.1, RFC 8252, docs/architecture.md#apps-without-secrets): registered with
// token_endpoint_auth_method "none", they get no secret, must use PKCE with S256, get refresh tokens only with
// offline_access, never client_credentials or api, and authenticate by client_id alone at the token, revocation and
// introspection endpoints; a loopback IP redirect matches on any port. Driven with openid-client as a public client.
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import { client, type Client } from '../helpers/http.ts';
import {
  authorize,
  codeFrom,
  registerClient,
  startWithSignedInMember,
  tokenRequest,
  type SignedInMember,
} from '../helpers/oauth.ts';

const LOOPBACK = 'http://127.0.0.1/callback';
const NATIVE = 'com.example.notes:/oauth';
const SCOPES = ['openid', 'email', 'profile', 'offline_access'];

let setup: SignedInMember;
let orgAdmin: Client;
let spa: { id: string; client_id: string };
let rp: oidc.Configuration;
let confidential: { client_id: string; client_secret: string };

beforeAll(async () => {
  setup = await startWithSignedInMember();
  orgAdmin = setup.tenant.admin.api;
  spa = await registerClient(orgAdmin, {
    name: 'Notes for the desktop',
    token_endpoint_auth_method: 'none',
    redirect_uris: [LOOPBACK, NATIVE],
    allowed_scopes: SCOPES,
    consent_required: false,
  });
  confidential = await registerClient(orgAdmin, {
    name: 'Server app',
    redirect_uris: ['https://server.example.test/cb'],
    allowed_scopes: SCOPES,
    consent_required: false,
  });
  rp = await oidc.discovery(new URL(setup.server.url), spa.client_id, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
});
afterAll(() => setup?.server.stop());

/** The code flow of the public client with S256 through the member's session, back at `redirectUri`. */
async function codeFlow(scope: string, redirectUri = 'http://127.0.0.1:49152/callback') {
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(rp, {
    redirect_uri: redirectUri,
    scope,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 'st',
  });
  const back = await authorize(setup.server.url, setup.session, url.searchParams);
  return { back, verifier, redirectUri };
}

async function exchange(scope: string) {
  const { back, verifier } = await codeFlow(scope);
  return oidc.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: 'st' });
}

async function expectOAuthError(promise: Promise<unknown>, error: string) {
  const failure = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(failure, 'expected an OAuth error response').toBeInstanceOf(oidc.ResponseBodyError);
  expect((failure as oidc.ResponseBodyError).error).toBe(error);
}

describe('registration', () => {
  it('registers a public client over REST: no secret, token_endpoint_auth_method none', async () => {
    const reply = await orgAdmin.post('/api/v1/oauth-clients', {
      name: 'Single-page app',
      token_endpoint_auth_method: 'none',
      redirect_uris: ['https://spa.example.test/cb'],
      allowed_scopes: ['openid'],
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expectMatchesOpenApi('POST', '/api/v1/oauth-clients', reply);
    expect(reply.body).toMatchObject({ token_endpoint_auth_method: 'none', client_secret: null });
    const read = await orgAdmin.get(`/api/v1/oauth-clients/${reply.body.id}`);
    expect(read.body.token_endpoint_auth_method).toBe('none');
    expectMatchesOpenApi('GET', '/api/v1/oauth-clients/{id}', read);
    const row = await setup.server.base.db.oAuthClient.findUniqueOrThrow({ where: { id: reply.body.id } });
    expect(row.secretHash).toBeNull();
  });

  it('registers a public client over GraphQL, and a confidential one stays the default', async () => {
    const create = (input: Record<string, unknown>) =>
      orgAdmin.post('/graphql', {
        query: `mutation($input: CreateOAuthClientInput!) { createOAuthClient(input: $input) {
          __typename ... on OAuthClientWithSecret { clientSecret client { tokenEndpointAuthMethod } } } }`,
        variables: { input: { name: 'GraphQL app', redirectUris: [LOOPBACK], allowedScopes: ['openid'], ...input } },
      });
    const open = await create({ tokenEndpointAuthMethod: 'none' });
    expect(open.body.data.createOAuthClient).toEqual({
      __typename: 'OAuthClientWithSecret',
      clientSecret: null,
      client: { tokenEndpointAuthMethod: 'none' },
    });
    const kept = await create({});
    expect(kept.body.data.createOAuthClient.clientSecret).toMatch(/^tscs_/);
    expect(kept.body.data.createOAuthClient.client.tokenEndpointAuthMethod).toBe('client_secret_post');
  });

  const refusals: [string, Record<string, unknown>, string][] = [
    ['client_credentials', { grant_types: ['authorization_code', 'client_credentials'] }, 'grant_types'],
    ['the api scope', { allowed_scopes: ['openid', 'api'] }, 'allowed_scopes'],
    ['an unknown method', { token_endpoint_auth_method: 'client_secret_basic' }, 'token_endpoint_auth_method'],
  ];
  for (const [what, change, path] of refusals) {
    it(`refuses a public client with ${what} (400 at ${path})`, async () => {
      const reply = await orgAdmin.post('/api/v1/oauth-clients', {
        name: 'Refused',
        token_endpoint_auth_method: 'none',
        redirect_uris: [LOOPBACK],
        allowed_scopes: ['openid'],
        ...change,
      });
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expectMatchesOpenApi('POST', '/api/v1/oauth-clients', reply);
      expect(reply.body.details.map((d: { path: string }) => d.path)).toEqual([path]);
    });
  }

  it('refuses to widen a public client to client_credentials or api, to rotate a secret it has not, or to change its kind', async () => {
    const widen = await orgAdmin.patch(`/api/v1/oauth-clients/${spa.id}`, {
      grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
    });
    expect(widen.status).toBe(400);
    expect(widen.body.details.map((d: { path: string }) => d.path)).toEqual(['grant_types']);
    const api = await orgAdmin.patch(`/api/v1/oauth-clients/${spa.id}`, { allowed_scopes: ['openid', 'api'] });
    expect(api.status).toBe(400);
    expect(api.body.details.map((d: { path: string }) => d.path)).toEqual(['allowed_scopes']);
    const rotate = await orgAdmin.post(`/api/v1/oauth-clients/${spa.id}/rotate-secret`, {});
    expect(rotate.status).toBe(400);
    expect(rotate.body.error_description).toBe('A public client has no secret to rotate');
    const kind = await orgAdmin.patch(`/api/v1/oauth-clients/${spa.id}`, { token_endpoint_auth_method: 'none' });
    expect(kind.status).toBe(400);
    const row = await setup.server.base.db.oAuthClient.findUniqueOrThrow({ where: { id: spa.id } });
    expect(row).toMatchObject({ grantTypes: ['authorization_code', 'refresh_token'], secretHash: null });
    expect(row.allowedScopes).not.toContain('api');
  });

  it('discovery lists none for the token, revocation and introspection endpoints', () => {
    const metadata = rp.serverMetadata();
    for (const member of [
      'token_endpoint_auth_methods_supported',
      'revocation_endpoint_auth_methods_supported',
      'introspection_endpoint_auth_methods_supported',
    ] as const)
      expect(metadata[member]).toEqual(['client_secret_post', 'none']);
  });
});

describe('the authorization endpoint', () => {
  const params = (extra: Record<string, string>) => ({
    client_id: spa.client_id,
    redirect_uri: LOOPBACK,
    response_type: 'code',
    scope: 'openid',
    state: 'st',
    ...extra,
  });

  it('sends a public client without a code_challenge back with invalid_request', async () => {
    const back = await authorize(setup.server.url, setup.session, params({}));
    expect(back.origin + back.pathname).toBe(LOOPBACK);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toBe('A public client must send code_challenge, with S256');
    expect(back.searchParams.get('state')).toBe('st');
  });

  it('refuses the plain method for a public client, given or by default', async () => {
    const challenge = oidc.randomPKCECodeVerifier();
    for (const method of [{ code_challenge_method: 'plain' }, {}] as Record<string, string>[]) {
      const back = await authorize(setup.server.url, setup.session, params({ code_challenge: challenge, ...method }));
      expect(back.searchParams.get('error')).toBe('invalid_request');
      expect(back.searchParams.get('error_description')).toBe('A public client must use code_challenge_method S256');
      expect(back.searchParams.has('code')).toBe(false);
    }
  });

  it('matches a loopback IP redirect on any port (RFC 8252 7.3), and nothing else loosely', async () => {
    const challenge = await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier());
    const pkce = { code_challenge: challenge, code_challenge_method: 'S256' };
    for (const port of ['1024', '49152', '65535']) {
      const uri = `http://127.0.0.1:${port}/callback`;
      const back = await authorize(setup.server.url, setup.session, params({ ...pkce, redirect_uri: uri }));
      expect(back.origin + back.pathname).toBe(uri);
      expect(codeFrom(back)).toMatch(/^tsa_/);
    }
    // Another path, a query, user info, another loopback name or a non-canonical spelling: shown on our page.
    const refused = [
      'http://127.0.0.1:8080/other',
      'http://127.0.0.1:8080/callback?x=1',
      'http://user@127.0.0.1:8080/callback',
      'http://localhost:8080/callback',
      'http://127.0.0.2:8080/callback',
      'https://127.0.0.1:8080/callback',
      'http://127.0.0.1:08080/callback',
      'http://127.0.0.1:8080/callback#f',
    ].map((uri) => [uri, 'redirect_uri not registered']);
    refused.push(['http://127.0.0.1:8080/callback\u0000', 'redirect_uri must not contain NUL']);
    for (const [uri, message] of refused) {
      const res = await fetch(
        `${setup.server.url}/oauth/authorize?${new URLSearchParams(params({ ...pkce, redirect_uri: uri! }))}`,
        { redirect: 'manual', headers: { cookie: `tessera_session=${setup.session}` } },
      );
      expect(res.status, uri).toBe(400);
      expect(await res.text(), uri).toContain(message);
    }
  });
});

describe('the token endpoint', () => {
  it('exchanges the code by client_id alone, with a refresh token only when offline_access was granted', async () => {
    const offline = await exchange('openid email offline_access');
    expect(offline.refresh_token).toMatch(/^tsr_/);
    expect(offline.claims()?.aud).toBe(spa.client_id);
    const online = await exchange('openid email');
    expect(online.access_token).toBeTruthy();
    expect(online.refresh_token).toBeUndefined();
    const grants = await setup.server.base.db.refreshToken.count({ where: { clientId: spa.id } });
    expect(grants).toBe(1);
  });

  it('refuses a code without its verifier or with another', async () => {
    for (const verifier of [undefined, oidc.randomPKCECodeVerifier()]) {
      const { back, redirectUri } = await codeFlow('openid');
      const reply = await tokenRequest(setup.server.url, {
        grant_type: 'authorization_code',
        code: codeFrom(back),
        redirect_uri: redirectUri,
        client_id: spa.client_id,
        ...(verifier ? { code_verifier: verifier } : {}),
      });
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({ error: 'invalid_grant', error_description: 'PKCE verification failed' });
    }
  });

  it('rotates refresh tokens, and a replayed one ends the grant', async () => {
    const first = await exchange('openid offline_access');
    const second = await oidc.refreshTokenGrant(rp, first.refresh_token!);
    expect(second.refresh_token).toMatch(/^tsr_/);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    // The first refresh token again: a replay. The grant ends, with the refresh token issued from it.
    await expectOAuthError(oidc.refreshTokenGrant(rp, first.refresh_token!), 'invalid_grant');
    await expectOAuthError(oidc.refreshTokenGrant(rp, second.refresh_token!), 'invalid_grant');
    const userinfo = await fetch(`${setup.server.url}/oauth/userinfo`, {
      headers: { authorization: `Bearer ${second.access_token}` },
    });
    expect(userinfo.status).toBe(401);
  });

  it('redeems one code once when 20 redemptions race', async () => {
    const { back, verifier, redirectUri } = await codeFlow('openid offline_access');
    const body = {
      grant_type: 'authorization_code',
      code: codeFrom(back),
      redirect_uri: redirectUri,
      code_verifier: verifier,
      client_id: spa.client_id,
    };
    const replies = await Promise.all(Array.from({ length: 20 }, () => tokenRequest(setup.server.url, body)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(19);
  });

  it('refuses a public client that sends a secret, and a confidential client that sends none (401 invalid_client)', async () => {
    const { back, verifier, redirectUri } = await codeFlow('openid');
    const code = { grant_type: 'authorization_code', code: codeFrom(back), redirect_uri: redirectUri };
    const withSecret = await tokenRequest(setup.server.url, {
      ...code,
      code_verifier: verifier,
      client_id: spa.client_id,
      client_secret: 'tscs_guess',
    });
    expect(withSecret.status).toBe(401);
    expect(withSecret.body.error).toBe('invalid_client');
    expectMatchesOpenApi('POST', '/oauth/token', withSecret);
    // The code was not spent by the refused request.
    const ok = await tokenRequest(setup.server.url, { ...code, code_verifier: verifier, client_id: spa.client_id });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expectMatchesOpenApi('POST', '/oauth/token', ok);

    const refresh = await tokenRequest(setup.server.url, {
      grant_type: 'refresh_token',
      refresh_token: 'tsr_whatever',
      client_id: confidential.client_id,
    });
    expect(refresh.status).toBe(401);
    expect(refresh.body.error).toBe('invalid_client');
    const machine = await tokenRequest(setup.server.url, {
      grant_type: 'client_credentials',
      client_id: spa.client_id,
    });
    expect(machine.status).toBe(400);
    expect(machine.body.error).toBe('unauthorized_client');
  });

  it('introspects and revokes by client_id alone', async () => {
    const tokens = await exchange('openid offline_access');
    const introspected = await oidc.tokenIntrospection(rp, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, client_id: spa.client_id });
    await oidc.tokenRevocation(rp, tokens.refresh_token!);
    await expectOAuthError(oidc.refreshTokenGrant(rp, tokens.refresh_token!), 'invalid_grant');
    const foreign = await fetch(`${setup.server.url}/oauth/introspect`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.access_token, client_id: spa.client_id, client_secret: 'x' }),
    });
    expect(foreign.status).toBe(401);
  });

  it("tells a public client nothing of another client's tokens, even in its own organization", async () => {
    const back = await authorize(setup.server.url, setup.session, {
      client_id: confidential.client_id,
      redirect_uri: 'https://server.example.test/cb',
      response_type: 'code',
      scope: 'openid offline_access',
    });
    const tokens = await tokenRequest(setup.server.url, {
      grant_type: 'authorization_code',
      code: codeFrom(back),
      redirect_uri: 'https://server.example.test/cb',
      client_id: confidential.client_id,
      client_secret: confidential.client_secret,
    });
    expect(tokens.status).toBe(200);
    for (const token of [tokens.body.access_token, tokens.body.refresh_token]) {
      await expect(oidc.tokenIntrospection(rp, token)).resolves.toEqual({ active: false });
    }
    // The confidential client itself is told.
    const told = await client(setup.server.url).post(
      '/oauth/introspect',
      new URLSearchParams({
        token: tokens.body.refresh_token,
        client_id: confidential.client_id,
        client_secret: confidential.client_secret,
      }).toString(),
      { 'content-type': 'application/x-www-form-urlencoded' },
    );
    expect(told.body.active).toBe(true);
  });
});
