// What an ID token says of the sign-in behind it (RFC 8176 amr, OIDC Core acr), checked by openid-client, and how
// the authorization endpoint asks for a second factor: acr_values preferring one, an organization requiring one,
// prompt=login and max_age (docs/architecture.md#second-factors).
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { movableClock } from '../helpers/clock.ts';
import { followRedirect, registerClient, relyingParty, sessionOf, type RegisteredClient } from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/callback';
const ACR_1FA = 'urn:tessera:acr:1fa';
const ACR_MFA = 'urn:tessera:acr:mfa';

const clock = movableClock();
let server: TestServer;
let tenant: Tenant;
let strict: Tenant;
let app: RegisteredClient;
let strictApp: RegisteredClient;
let rp: oidc.Configuration;
let strictRp: oidc.Configuration;

beforeAll(async () => {
  server = await startTestServer({ clock });
  const admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, admin);
  strict = await createTenant(server.url, admin);
  const body = {
    name: 'Relying party',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email', 'offline_access'],
    consent_required: false,
  };
  app = await registerClient(tenant.admin.api, body);
  strictApp = await registerClient(strict.admin.api, body);
  [rp, strictRp] = await Promise.all([relyingParty(server.url, app), relyingParty(server.url, strictApp)]);
});
afterAll(() => server?.stop());

/** A code of the authenticator app at the server's time, `steps` steps on; each test moves the clock on a step after one. */
const codeOf = (secret: string, steps = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: clock.now().getTime() + steps * 30_000,
  });

/** Sets up TOTP for the session `api` signs in with; answers the secret. */
async function enrolTotp(api: Client): Promise<string> {
  const enrolment = await api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD });
  expect(enrolment.status, JSON.stringify(enrolment.body)).toBe(201);
  const confirmed = await api.post('/api/v1/users/me/mfa/totp/confirm', { code: codeOf(enrolment.body.secret) });
  expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
  clock.advance(30);
  return enrolment.body.secret;
}

/** Signs in with the password and, asked for it, a code: the session token. */
async function signInWithCode(person: Person, secret: string): Promise<string> {
  const first = await client(server.url).post('/api/v1/auth/login', { email: person.email, password: PASSWORD });
  expect(first.body).toMatchObject({ mfa_required: true, methods: expect.arrayContaining(['totp', 'recovery_code']) });
  const second = await client(server.url).post('/api/v1/auth/login/mfa', {
    mfa_token: first.body.mfa_token,
    code: codeOf(secret),
  });
  expect(second.status, JSON.stringify(second.body)).toBe(200);
  clock.advance(30);
  return second.body.token;
}

/** The code flow as openid-client drives it (PKCE, state, nonce), from a browser holding `session`. */
async function codeFlow(config: oidc.Configuration, session: string, extra: Record<string, string> = {}) {
  const verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  const state = oidc.randomState();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid email offline_access',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    state,
    ...extra,
  });
  const location = await followRedirect(url, session);
  expect(location.origin + location.pathname, String(location)).toBe(REDIRECT);
  return oidc.authorizationCodeGrant(config, location, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: state,
  });
}

/** Where the authorization endpoint sends a browser holding `session`, without following further. */
const authorizeTo = async (config: oidc.Configuration, session: string, extra: Record<string, string>) =>
  followRedirect(
    oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'S256',
      ...extra,
    }),
    session,
  );

const member = (t: Tenant, label: string) => addPerson(server.url, t.owner.api, t.id, 'member', label);

describe('amr and acr in ID tokens', () => {
  it('discovery lists the acr values and the amr and acr claims', async () => {
    const doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<
      string,
      string[]
    >;
    expect(doc.acr_values_supported).toEqual([ACR_1FA, ACR_MFA]);
    expect(doc.claims_supported).toEqual(expect.arrayContaining(['amr', 'acr']));
  });

  it('a password sign-in: amr [pwd], one-factor acr, kept by a refreshed ID token', async () => {
    const person = await member(tenant, 'amr-pwd');
    const tokens = await codeFlow(rp, await sessionOf(server.url, person));
    expect(tokens.claims()).toMatchObject({ amr: ['pwd'], acr: ACR_1FA });
    const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
    expect(decodeJwt(refreshed.id_token!)).toMatchObject({ amr: ['pwd'], acr: ACR_1FA });
  });

  it('a password and TOTP sign-in: amr [pwd, otp, mfa], the multi-factor acr, kept by a refreshed ID token', async () => {
    const person = await member(tenant, 'amr-otp');
    const secret = await enrolTotp(person.api);
    const tokens = await codeFlow(rp, await signInWithCode(person, secret));
    expect(tokens.claims()).toMatchObject({ amr: ['pwd', 'otp', 'mfa'], acr: ACR_MFA });
    const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
    expect(decodeJwt(refreshed.id_token!)).toMatchObject({ amr: ['pwd', 'otp', 'mfa'], acr: ACR_MFA });
  });
});

describe('asking for a second factor at the authorization endpoint', () => {
  it('acr_values preferring a second factor sends a person who has one, signed in with a password alone, to sign in anew', async () => {
    const person = await member(tenant, 'acr-step-up');
    const secret = await enrolTotp(person.api);
    // A session made with the password alone, as one from before the factor was set up.
    const login = await authorizeTo(rp, await passwordOnlySession(person), { acr_values: ACR_MFA });
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('reauth')).toBe('1');
    // The way back no longer asks, so that a person who signs in with the factor is not asked again.
    expect(new URL(login.searchParams.get('return_to')!, server.url).searchParams.get('acr_values')).toBeNull();
    // prompt=none cannot show the page: login_required.
    const none = await authorizeTo(rp, await passwordOnlySession(person), { acr_values: ACR_MFA, prompt: 'none' });
    expect(none.searchParams.get('error')).toBe('login_required');
    // Signed in with the code, the same request goes through and the ID token says so.
    const tokens = await codeFlow(rp, await signInWithCode(person, secret), { acr_values: ACR_MFA });
    expect(tokens.claims()).toMatchObject({ acr: ACR_MFA, amr: expect.arrayContaining(['otp', 'mfa']) });
  });

  it('acr_values is voluntary: a person without a second factor goes through, and the ID token says one factor', async () => {
    const person = await member(tenant, 'acr-voluntary');
    const tokens = await codeFlow(rp, await sessionOf(server.url, person), { acr_values: `${ACR_MFA} ${ACR_1FA}` });
    expect(tokens.claims()).toMatchObject({ acr: ACR_1FA, amr: ['pwd'] });
  });

  it('prompt=login and a max_age the session is older than send a signed-in person to sign in anew', async () => {
    const person = await member(tenant, 'reauth');
    const session = await sessionOf(server.url, person);
    for (const extra of [{ prompt: 'login' }, { max_age: '0' }] as Record<string, string>[]) {
      const login = await authorizeTo(rp, session, extra);
      expect(login.pathname).toBe('/login');
      expect(login.searchParams.get('reauth')).toBe('1');
    }
    // A signed-out browser is sent to sign in as before, without reauth.
    const signedOut = await followRedirect(
      oidc.buildAuthorizationUrl(rp, {
        redirect_uri: REDIRECT,
        scope: 'openid',
        code_challenge: 'x'.repeat(43),
        code_challenge_method: 'S256',
      }),
      null,
    );
    expect(signedOut.pathname).toBe('/login');
    expect(signedOut.searchParams.get('reauth')).toBeNull();
  });

  it('an organization that requires a second factor: its clients need a session that used one; a member without one sets one up first', async () => {
    // The owner sets one up, then requires it.
    await enrolTotp(strict.owner.api);
    const required = await strict.owner.api.patch(`/v1/organizations/${strict.id}`, { require_mfa: true });
    expect(required.status, JSON.stringify(required.body)).toBe(200);

    const person = await member(strict, 'strict');
    const session = await passwordOnlySession(person);
    const enrol = await authorizeTo(strictRp, session, {});
    expect(enrol.pathname).toBe('/portal/security');
    expect(enrol.searchParams.get('enrol')).toBe('1');
    expect(enrol.searchParams.get('return_to')).toMatch(/^\/oauth\/authorize\?/);

    // Setting up TOTP with that session proves the factor: the same session now goes through, with amr saying so.
    const api = client(server.url, { token: session });
    const enrolment = await api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD });
    expect((await api.post('/api/v1/users/me/mfa/totp/confirm', { code: codeOf(enrolment.body.secret) })).status).toBe(
      200,
    );
    clock.advance(30);
    const tokens = await codeFlow(strictRp, session);
    expect(tokens.claims()).toMatchObject({ acr: ACR_MFA, amr: expect.arrayContaining(['pwd', 'otp', 'mfa']) });

    // A session of the same person made with the password alone is sent to sign in anew (they have a factor now).
    const again = await authorizeTo(strictRp, await passwordOnlySession(person), {});
    expect(again.pathname).toBe('/login');
    expect(again.searchParams.get('reauth')).toBe('1');
  });
});

/**
 * A session made with the password alone, for a person who may have a factor since: the service's own
 * createSession, as the password sign-in made it before the factor existed.
 */
async function passwordOnlySession(person: Person): Promise<string> {
  const reply = await client(server.url).post('/api/v1/auth/login', { email: person.email, password: PASSWORD });
  if (!reply.body.mfa_required) return reply.body.token;
  // The person has a factor: the only password-only sessions left are those made before it. Make one as they were.
  const { createSession } = await import('../../schema/modules/sessions/sessions.service.ts');
  const user = await server.base.db.user.findUniqueOrThrow({
    where: { email: person.email },
    select: { id: true, sessionVersion: true },
  });
  const ctx = { clock, request: { ip: '127.0.0.1', userAgent: 'test' } } as never;
  const issued = await server.base.db.$transaction((tx) =>
    createSession(ctx, tx, user.id, user.sessionVersion, { amr: ['pwd'] }),
  );
  return issued.token;
}
