// The positive flows, driven by a certified relying-party library (openid-client): discovery, the code flow
// with PKCE S256 and a validated ID token, userinfo by scope, refresh-token rotation and replay, client
// credentials, revocation, introspection, remembered consent, the session version, RP-initiated logout, and
// prompt / max_age / login_hint at the authorization endpoint.
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client as restClient, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import {
  authorize,
  browserGet,
  codeFrom,
  decideConsent,
  exchangeCode,
  followRedirect,
  registerClient,
  relyingParty,
  sessionOf,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/callback';
const POST_LOGOUT = 'https://rp.example.test/signed-out';
const ALL_SCOPES = ['openid', 'email', 'profile', 'organization', 'offline_access', 'api'];

let server: TestServer;
let admin: Client;
let tenant: Tenant;
let otherTenant: Tenant;
/** Asks for consent (the default). */
let app: RegisteredClient;
/** consent_required: false. */
let direct: RegisteredClient;
/** grant_types: ["client_credentials"]. */
let machine: RegisteredClient;
/** A client of another organization. */
let foreign: RegisteredClient;
let appRp: oidc.Configuration;
let directRp: oidc.Configuration;
let machineRp: oidc.Configuration;
let foreignRp: oidc.Configuration;

const register = (api: Client, body: Record<string, unknown>) =>
  registerClient(api, { name: 'Relying party', redirect_uris: [REDIRECT], allowed_scopes: ALL_SCOPES, ...body });

beforeAll(async () => {
  server = await startTestServer();
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, admin);
  otherTenant = await createTenant(server.url, admin);
  app = await register(tenant.admin.api, { name: 'Consenting app', post_logout_redirect_uris: [POST_LOGOUT] });
  direct = await register(tenant.admin.api, {
    name: 'First-party app',
    consent_required: false,
    post_logout_redirect_uris: [POST_LOGOUT],
  });
  machine = await register(tenant.admin.api, {
    name: 'Nightly job',
    redirect_uris: [],
    grant_types: ['client_credentials'],
    allowed_scopes: ['reports'],
  });
  foreign = await register(otherTenant.admin.api, { name: 'Foreign app', consent_required: false });
  [appRp, directRp, machineRp, foreignRp] = await Promise.all([
    relyingParty(server.url, app),
    relyingParty(server.url, direct),
    relyingParty(server.url, machine),
    relyingParty(server.url, foreign),
  ]);
});
afterAll(() => server?.stop());

// ---- driving the authorization endpoint without a browser ----------------------------------------------------

interface FlowResult {
  tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers;
  /** Whether the consent page was shown on the way. */
  consented: boolean;
  nonce: string;
}

/** The whole code flow with PKCE S256 as openid-client does it; approves consent when asked. */
async function codeFlow(
  config: oidc.Configuration,
  session: string,
  options: { scope?: string; extra?: Record<string, string>; expectConsent?: boolean } = {},
): Promise<FlowResult> {
  const verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: options.scope ?? 'openid email profile organization',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    state,
    ...options.extra,
  });
  let location = await followRedirect(url, session);
  const consented = location.pathname === '/consent';
  if (options.expectConsent !== undefined)
    expect(consented, `consent page shown: ${location}`).toBe(options.expectConsent);
  if (consented) location = await decideConsent(server.url, session, location);
  expect(location.origin + location.pathname).toBe(REDIRECT);
  const tokens = await oidc.authorizationCodeGrant(config, location, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: state,
  });
  return { tokens, consented, nonce };
}

/** A fresh member of the tenant with a signed-in browser session. */
async function freshMember(label: string): Promise<{ person: Person; session: string }> {
  const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', label);
  return { person, session: await sessionOf(server.url, person) };
}

const userinfoReply = (accessToken: string) => restClient(server.url, { token: accessToken }).get('/oauth/userinfo');

async function expectDeadAccessToken(accessToken: string) {
  const reply = await userinfoReply(accessToken);
  expect(reply.status).toBe(401);
  expect(reply.body).toEqual({ error: 'invalid_token', error_description: 'Access token is invalid or expired' });
  expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer/);
  expectMatchesOpenApi('GET', '/oauth/userinfo', reply);
}

/** The promise rejects with an OAuth error response of this code. */
async function expectOAuthError(promise: Promise<unknown>, error: string) {
  const failure = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(failure, 'expected an OAuth error response').toBeInstanceOf(oidc.ResponseBodyError);
  expect((failure as oidc.ResponseBodyError).error).toBe(error);
  return failure as oidc.ResponseBodyError;
}

// ---- the tests ---------------------------------------------------------------------------------------------

describe('discovery', () => {
  it('publishes the OpenID configuration, and the same document as RFC 8414 metadata', async () => {
    const res = await fetch(`${server.url}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const doc = (await res.json()) as Record<string, any>;
    expect(doc).toMatchObject({
      issuer: server.url,
      authorization_endpoint: `${server.url}/oauth/authorize`,
      token_endpoint: `${server.url}/oauth/token`,
      userinfo_endpoint: `${server.url}/oauth/userinfo`,
      jwks_uri: `${server.url}/.well-known/jwks.json`,
      revocation_endpoint: `${server.url}/oauth/revoke`,
      introspection_endpoint: `${server.url}/oauth/introspect`,
      end_session_endpoint: `${server.url}/oauth/logout`,
      response_types_supported: ['code'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'none'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(doc.code_challenge_methods_supported).toEqual(expect.arrayContaining(['S256', 'plain']));
    expect(doc.id_token_signing_alg_values_supported).toEqual(expect.arrayContaining(['RS256', 'ES256', 'EdDSA']));
    expect(doc.grant_types_supported).toEqual(
      expect.arrayContaining(['authorization_code', 'refresh_token', 'client_credentials']),
    );
    expect(doc.scopes_supported).toEqual(
      expect.arrayContaining(['openid', 'email', 'profile', 'organization', 'offline_access']),
    );
    expect(doc.subject_types_supported).toEqual(['public']);

    const rfc8414 = await fetch(`${server.url}/.well-known/oauth-authorization-server`);
    expect(rfc8414.status).toBe(200);
    const metadata = await rfc8414.json();
    expect(metadata).toEqual(doc);
    expectMatchesOpenApi('GET', '/.well-known/oauth-authorization-server', {
      status: rfc8414.status,
      headers: rfc8414.headers,
      body: metadata,
    });

    // openid-client accepted it (issuer identical to the discovery URL) and reads the same endpoints.
    expect(appRp.serverMetadata().issuer).toBe(server.url);
    expect(appRp.serverMetadata().token_endpoint).toBe(`${server.url}/oauth/token`);
  });
});

describe('the authorization code flow with PKCE S256', () => {
  it('issues tokens whose ID token openid-client validates (signature, iss, aud, nonce), with a matching at_hash', async () => {
    const { session } = await freshMember('rp');
    const { tokens, nonce } = await codeFlow(directRp, session);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.refresh_token).toBeTruthy();
    expect(tokens.scope?.split(' ').sort()).toEqual(['email', 'openid', 'organization', 'profile']);
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: server.url, aud: direct.client_id, nonce });
    expect(typeof claims.auth_time).toBe('number');
    expect(claims.exp - claims.iat).toBe(3600);
    expect(decodeProtectedHeader(tokens.id_token!).alg).toBe('RS256');
    const digest = createHash('sha256').update(tokens.access_token).digest();
    expect(claims.at_hash).toBe(digest.subarray(0, 16).toString('base64url'));
  });

  it('works without a nonce (optional in the code flow): the ID token then carries none', async () => {
    const { session } = await freshMember('nononce');
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(directRp, {
      redirect_uri: REDIRECT,
      scope: 'openid email',
      state: 'st',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    expect(url.searchParams.has('nonce')).toBe(false);
    const location = await followRedirect(url, session);
    const tokens = await oidc.authorizationCodeGrant(directRp, location, {
      pkceCodeVerifier: verifier,
      expectedState: 'st',
    });
    expect(tokens.claims()).not.toHaveProperty('nonce');
  });

  it('answers the token request with Cache-Control: no-store, token_type Bearer, expires_in 3600 and the scope', async () => {
    const { session } = await freshMember('raw');
    // Without openid-client, to see the token endpoint's reply raw (headers and all).
    const location = await authorize(server.url, session, {
      client_id: direct.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid email',
      state: 's',
      nonce: 'n',
    });
    const reply = await exchangeCode(server.url, direct, codeFrom(location), REDIRECT);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(reply.headers.get('cache-control')).toBe('no-store');
    expectMatchesOpenApi('POST', '/oauth/token', reply);
    expect(reply.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'openid email' });
    expect(typeof reply.body.access_token).toBe('string');
    expect(reply.body.refresh_token).toMatch(/^\S+$/);
    expect(reply.body.id_token.split('.')).toHaveLength(3);
  });

  it('mints RFC 9068 access tokens: typ at+jwt, sub, aud = client_id, iss, scope, exp - iat = 3600, verifiable with JWKS', async () => {
    const { person, session } = await freshMember('at');
    const { tokens } = await codeFlow(directRp, session, { scope: 'openid email' });
    const header = decodeProtectedHeader(tokens.access_token);
    expect(header.typ).toBe('at+jwt');
    expect(header.kid).toBeTruthy();
    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(tokens.access_token, jwks, {
      issuer: server.url,
      audience: direct.client_id,
      typ: 'at+jwt',
    });
    expect(payload).toMatchObject({
      sub: person.id,
      aud: direct.client_id,
      iss: server.url,
      scope: 'openid email',
      client_id: direct.client_id,
    });
    expect(payload.exp! - payload.iat!).toBe(3600);
    expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(60);
    expect(payload.jti).toBeTruthy();
  });
});

describe('userinfo', () => {
  it('gives the claims of the granted scopes: email, profile and organization', async () => {
    const { person, session } = await freshMember('claims');
    const { tokens } = await codeFlow(directRp, session);
    const info = await oidc.fetchUserInfo(directRp, tokens.access_token, person.id);
    expect(info).toMatchObject({
      sub: person.id,
      email: person.email,
      name: 'claims',
      organization_id: tenant.id,
      organizationId: tenant.id,
      organization_name: tenant.name,
      role: 'member',
    });
    expect(typeof info.email_verified).toBe('boolean');

    const reply = await userinfoReply(tokens.access_token);
    expect(reply.headers.get('cache-control')).toBe('no-store');
    expectMatchesOpenApi('GET', '/oauth/userinfo', reply);
  });

  it('leaves out what was not granted: openid alone is just sub; email adds only email and email_verified', async () => {
    const { person, session } = await freshMember('narrow');
    const bare = await codeFlow(directRp, session, { scope: 'openid' });
    expect(await oidc.fetchUserInfo(directRp, bare.tokens.access_token, person.id)).toEqual({ sub: person.id });

    const email = await codeFlow(directRp, session, { scope: 'openid email' });
    const info = await oidc.fetchUserInfo(directRp, email.tokens.access_token, person.id);
    expect(Object.keys(info).sort()).toEqual(['email', 'email_verified', 'sub']);
    // The ID token carries the same claims.
    expect(email.tokens.claims()).toMatchObject({ sub: person.id, email: person.email });
    expect(email.tokens.claims()).not.toHaveProperty('organization_id');
    expect(email.tokens.claims()).not.toHaveProperty('name');
  });
});

describe('refresh tokens', () => {
  it('rotate on every use; replaying a used one is invalid_grant and ends the whole grant', async () => {
    const { person, session } = await freshMember('refresh');
    const { tokens } = await codeFlow(directRp, session);
    const first = tokens.refresh_token!;

    const second = await oidc.refreshTokenGrant(directRp, first);
    expect(second.refresh_token).toBeTruthy();
    expect(second.refresh_token).not.toBe(first);
    expect(second.access_token).not.toBe(tokens.access_token);
    expect(second.expires_in).toBe(3600);
    expect(second.claims()?.sub).toBe(person.id);
    expect((await oidc.fetchUserInfo(directRp, second.access_token, person.id)).sub).toBe(person.id);

    const third = await oidc.refreshTokenGrant(directRp, second.refresh_token!);
    expect(third.refresh_token).not.toBe(second.refresh_token);
    expect((await userinfoReply(third.access_token)).status).toBe(200);

    await expectOAuthError(oidc.refreshTokenGrant(directRp, first), 'invalid_grant');

    // Everything issued from the grant is gone: the newest access token and the newest refresh token alike.
    await expectDeadAccessToken(third.access_token);
    await expectDeadAccessToken(tokens.access_token);
    await expectOAuthError(oidc.refreshTokenGrant(directRp, third.refresh_token!), 'invalid_grant');
  });

  it('belong to their client: another client presenting one gets invalid_grant', async () => {
    const { session } = await freshMember('bound');
    const { tokens } = await codeFlow(directRp, session);
    await expectOAuthError(oidc.refreshTokenGrant(appRp, tokens.refresh_token!), 'invalid_grant');
  });
});

describe('client credentials', () => {
  it('gives a machine client an access token of its own, with no refresh or ID token', async () => {
    const tokens = await oidc.clientCredentialsGrant(machineRp, { scope: 'reports' });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.id_token).toBeUndefined();
    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, {
      issuer: server.url,
      audience: machine.client_id,
    });
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(payload).toMatchObject({ sub: machine.client_id, client_id: machine.client_id, scope: 'reports' });

    const introspected = await oidc.tokenIntrospection(machineRp, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, client_id: machine.client_id, scope: 'reports' });
  });

  it('is refused to a client not registered for it, and user scopes are refused to a machine client', async () => {
    await expectOAuthError(oidc.clientCredentialsGrant(directRp), 'unauthorized_client');
    await expectOAuthError(oidc.clientCredentialsGrant(machineRp, { scope: 'openid' }), 'invalid_scope');
  });
});

describe('the access token on the REST interface', () => {
  it('works as a Bearer token for GET /api/v1/users/me', async () => {
    const { person, session } = await freshMember('rest');
    const { tokens } = await codeFlow(directRp, session);
    const me = await restClient(server.url, { token: tokens.access_token }).get('/api/v1/users/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: person.id, email: person.email });
    expectMatchesOpenApi('GET', '/api/v1/users/me', me);
  });

  it("acts only within its client's organization, even for a user of two organizations", async () => {
    const { person, session } = await freshMember('twoorgs');
    // The same user joins another organization too.
    const invite = await otherTenant.owner.api.post(`/v1/organizations/${otherTenant.id}/invitations`, {
      email: person.email,
      role: 'member',
    });
    expect(invite.status).toBe(201);
    const accepted = await restClient(server.url, { token: session }).post('/api/v1/invitations/accept', {
      token: invite.body.token,
    });
    expect(accepted.status).toBe(200);
    const bySession = await restClient(server.url, { token: session }).get('/api/v1/orgs');
    expect(bySession.body.map((o: { id: string }) => o.id).sort()).toEqual([tenant.id, otherTenant.id].sort());

    // Reading an organization beyond the caller's own list needs `api` (docs/architecture.md#identity-sessions-and-tokens).
    const { tokens } = await codeFlow(directRp, session, { scope: 'openid api' });
    const api = restClient(server.url, { token: tokens.access_token });
    const orgs = await api.get('/api/v1/orgs');
    expect(orgs.status).toBe(200);
    expect(orgs.body.map((o: { id: string }) => o.id)).toEqual([tenant.id]);
    expect((await api.get(`/v1/organizations/${tenant.id}`)).status).toBe(200);
    expect((await api.get(`/v1/organizations/${otherTenant.id}`)).status).toBe(404);
  });
});

describe('revocation (RFC 7009)', () => {
  it('revoking the refresh token ends refreshing and the access tokens of the grant', async () => {
    const { session } = await freshMember('revoke');
    const { tokens } = await codeFlow(directRp, session);
    expect((await userinfoReply(tokens.access_token)).status).toBe(200);
    await oidc.tokenRevocation(directRp, tokens.refresh_token!);
    await expectOAuthError(oidc.refreshTokenGrant(directRp, tokens.refresh_token!), 'invalid_grant');
    await expectDeadAccessToken(tokens.access_token);
  });

  it('revoking the access token ends it', async () => {
    const { session } = await freshMember('revokeat');
    const { tokens } = await codeFlow(directRp, session);
    await oidc.tokenRevocation(directRp, tokens.access_token);
    await expectDeadAccessToken(tokens.access_token);
  });

  it("answers 200 for another client's token without revoking it", async () => {
    const { session } = await freshMember('revokeother');
    const { tokens } = await codeFlow(directRp, session);
    await oidc.tokenRevocation(appRp, tokens.access_token);
    expect((await userinfoReply(tokens.access_token)).status).toBe(200);
  });
});

describe('introspection (RFC 7662)', () => {
  it('describes live tokens, says active:false after revocation, and nothing to another organization', async () => {
    const { person, session } = await freshMember('introspect');
    const { tokens } = await codeFlow(directRp, session, { scope: 'openid email' });

    const access = await oidc.tokenIntrospection(directRp, tokens.access_token);
    expect(access).toMatchObject({
      active: true,
      scope: 'openid email',
      client_id: direct.client_id,
      sub: person.id,
      iss: server.url,
    });
    expect(access.exp! - Date.now() / 1000).toBeGreaterThan(3500);
    const refresh = await oidc.tokenIntrospection(directRp, tokens.refresh_token!);
    expect(refresh).toMatchObject({ active: true, client_id: direct.client_id, sub: person.id });

    // Another client of the same organization may look; a client of another organization sees nothing.
    expect((await oidc.tokenIntrospection(appRp, tokens.access_token)).active).toBe(true);
    expect(await oidc.tokenIntrospection(foreignRp, tokens.access_token)).toEqual({ active: false });
    expect(await oidc.tokenIntrospection(foreignRp, tokens.refresh_token!)).toEqual({ active: false });

    await oidc.tokenRevocation(directRp, tokens.access_token);
    expect(await oidc.tokenIntrospection(directRp, tokens.access_token)).toEqual({ active: false });
    expect(await oidc.tokenIntrospection(directRp, tokens.refresh_token!)).toEqual({ active: false });
    expect(await oidc.tokenIntrospection(directRp, 'not-a-token')).toEqual({ active: false });
  });
});

describe('consent', () => {
  it('is asked once and remembered; prompt=consent and a new scope ask again', async () => {
    const { person, session } = await freshMember('consent');
    const first = await codeFlow(appRp, session, { scope: 'openid email', expectConsent: true });
    expect(first.tokens.claims()?.sub).toBe(person.id);

    await codeFlow(appRp, session, { scope: 'openid email', expectConsent: false });
    await codeFlow(appRp, session, { scope: 'openid', expectConsent: false });
    await codeFlow(appRp, session, { scope: 'openid email', extra: { prompt: 'consent' }, expectConsent: true });
    await codeFlow(appRp, session, { scope: 'openid email profile', expectConsent: true });
    await codeFlow(appRp, session, { scope: 'openid email profile', expectConsent: false });
  });

  it('denied: back to the client with error=access_denied and the state', async () => {
    const { session } = await freshMember('deny');
    const url = oidc.buildAuthorizationUrl(appRp, { redirect_uri: REDIRECT, scope: 'openid', nonce: 'n', state: 'st' });
    const consent = await followRedirect(url, session);
    expect(consent.pathname).toBe('/consent');
    const back = await decideConsent(server.url, session, consent, false);
    expect(back.origin + back.pathname).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('st');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('takes one answer per request: a second Allow, or Allow after Deny, is refused and mints no code', async () => {
    const { session } = await freshMember('answer-once');
    const url = oidc.buildAuthorizationUrl(appRp, { redirect_uri: REDIRECT, scope: 'openid', nonce: 'n', state: 'st' });
    const consent = await followRedirect(url, session);
    const back = await decideConsent(server.url, session, consent);
    expect(codeFrom(back)).toMatch(/^tsa_/);
    await expect(decideConsent(server.url, session, consent)).rejects.toThrow(/already been answered/);

    const denied = await followRedirect(
      oidc.buildAuthorizationUrl(appRp, { redirect_uri: REDIRECT, scope: 'openid email profile', nonce: 'n' }),
      session,
    );
    expect(denied.pathname).toBe('/consent');
    await decideConsent(server.url, session, denied, false);
    await expect(decideConsent(server.url, session, denied)).rejects.toThrow(/already been answered/);
  });

  it('is skipped for a client registered with consent_required: false', async () => {
    const { session } = await freshMember('noconsent');
    await codeFlow(directRp, session, { expectConsent: false });
  });
});

describe('a password change', () => {
  it("ends the user's access and refresh tokens at once", async () => {
    const { person, session } = await freshMember('pwchange');
    const { tokens } = await codeFlow(directRp, session);
    expect((await userinfoReply(tokens.access_token)).status).toBe(200);

    const changed = await restClient(server.url, { token: session }).patch('/api/v1/users/me', {
      current_password: PASSWORD,
      password: 'an entirely new password',
    });
    expect(changed.status).toBe(200);

    await expectDeadAccessToken(tokens.access_token);
    expect((await restClient(server.url, { token: tokens.access_token }).get('/api/v1/users/me')).status).toBe(401);
    await expectOAuthError(oidc.refreshTokenGrant(directRp, tokens.refresh_token!), 'invalid_grant');
    expect(await oidc.tokenIntrospection(directRp, tokens.access_token)).toEqual({ active: false });

    // The new sign-in gets working tokens again.
    const again = await codeFlow(directRp, changed.body.token);
    expect((await oidc.fetchUserInfo(directRp, again.tokens.access_token, person.id)).sub).toBe(person.id);
  });
});

describe('RP-initiated logout', () => {
  it('ends the browser session and returns to the registered post_logout_redirect_uri with the state', async () => {
    const { session } = await freshMember('logout');
    const { tokens } = await codeFlow(directRp, session);
    const url = oidc.buildEndSessionUrl(directRp, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: POST_LOGOUT,
      state: 'x',
    });
    expect(url.href.startsWith(`${server.url}/oauth/logout?`)).toBe(true);
    const res = await browserGet(url, session);
    expect(res.status).toBe(302);
    expectMatchesOpenApi('GET', '/oauth/logout', {
      status: res.status,
      headers: res.headers,
      body: (await res.text()) || null,
    });
    const location = new URL(res.headers.get('location')!);
    expect(location.origin + location.pathname).toBe(POST_LOGOUT);
    expect(location.searchParams.get('state')).toBe('x');
    expect(res.headers.get('set-cookie') ?? '').toMatch(/tessera_session=;/);

    // The session is over: as a Bearer token and as the browser's cookie.
    expect((await restClient(server.url, { token: session }).get('/api/v1/users/me')).status).toBe(401);
    const signInAgain = oidc.buildAuthorizationUrl(directRp, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      nonce: 'n',
      state: 's',
    });
    expect((await followRedirect(signInAgain, session)).pathname).toBe('/login');
  });

  it('shows a 400 page, never a redirect, for an unregistered post_logout_redirect_uri', async () => {
    const { session } = await freshMember('badlogout');
    const { tokens } = await codeFlow(directRp, session);
    const url = oidc.buildEndSessionUrl(directRp, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: 'https://evil.example.test/',
      state: 'x',
    });
    const res = await browserGet(url, session);
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('post_logout_redirect_uri not registered');
  });
});

describe('prompt, max_age, login_hint and ignored parameters', () => {
  const authorizeUrl = (extra: Record<string, string>) =>
    oidc.buildAuthorizationUrl(directRp, { redirect_uri: REDIRECT, scope: 'openid', nonce: 'n', state: 's', ...extra });

  /** The /login redirect's return_to, which must lead back to the authorization endpoint without the re-login demand. */
  function returnTo(location: URL): URLSearchParams {
    expect(location.pathname).toBe('/login');
    const back = new URL(location.searchParams.get('return_to')!, server.url);
    expect(back.origin).toBe(server.url);
    expect(back.pathname).toBe('/oauth/authorize');
    return back.searchParams;
  }

  it('prompt=login sends a signed-in user to /login, and the way back does not ask again', async () => {
    const { session } = await freshMember('prompt');
    const back = returnTo(await followRedirect(authorizeUrl({ prompt: 'login' }), session));
    expect(back.get('client_id')).toBe(direct.client_id);
    expect(back.get('state')).toBe('s');
    expect(back.get('prompt')).toBeNull();
  });

  it('max_age=0 sends a signed-in user to /login, even one who signed in a moment ago', async () => {
    const { session } = await freshMember('maxage');
    const back = returnTo(await followRedirect(authorizeUrl({ max_age: '0' }), session));
    expect(back.get('max_age')).toBeNull();
    // A generous max_age lets the same session through.
    const ok = await followRedirect(authorizeUrl({ max_age: '3600' }), session);
    expect(ok.searchParams.get('code')).toBeTruthy();
  });

  it('without a session: /login with return_to, and login_hint carried along', async () => {
    const location = await followRedirect(authorizeUrl({ login_hint: 'someone@example.test' }), null);
    returnTo(location);
    expect(location.searchParams.get('login_hint')).toBe('someone@example.test');
    const withSession = await followRedirect(
      authorizeUrl({ login_hint: 'someone@example.test', prompt: 'login' }),
      await sessionOf(server.url, tenant.member),
    );
    expect(withSession.searchParams.get('login_hint')).toBe('someone@example.test');
  });

  it('ignores ui_locales, claims_locales and unknown parameters', async () => {
    const { person, session } = await freshMember('locales');
    const { tokens } = await codeFlow(directRp, session, {
      scope: 'openid',
      extra: { ui_locales: 'fr-CA fr en', claims_locales: 'de', display: 'page', some_extension: 'whatever' },
    });
    expect(tokens.claims()?.sub).toBe(person.id);
  });
});
