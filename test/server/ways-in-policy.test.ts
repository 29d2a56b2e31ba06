// Every way in honours the organizations' sign-in policy the same way (docs/architecture.md#single-sign-on and
// #second-factors): an address of a domain whose connection requires single sign-on gets no session but through
// that connection, whether it comes with a password, a second factor, a passkey, a platform-wide provider or a reset
// link; and a member of an organization that requires a second factor gets, whichever way they came in, the
// enrolment flag and nothing of that organization (licences, its portal pages) until they set one up. One table,
// one row per way in and policy, each over real HTTP against a real provider, authenticator and DNS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, mailedInvitationToken, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { movableClock, MINUTE } from '../helpers/clock.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { proveDomain, ssoSignInThroughOidc } from '../helpers/sso.ts';
import { codeAt, enrolTotp, toMidStep } from '../helpers/totp.ts';
import { SoftPasskey, startPasskeyServer } from '../helpers/webauthn.ts';
import { waitFor } from '../helpers/wait.ts';
import type { TestServer } from '../helpers/server.ts';

const SSO_DOMAIN = 'ways-sso.test';
const MFA_DOMAIN = 'ways-mfa.test';
const clock = movableClock();
let server: TestServer & { origin: string };
let dns: TestDnsServer;
let ca: TestCa;
let upstream: OidcUpstream;
let platform: Client;
/** Requires single sign-on for SSO_DOMAIN through `ssoConnection`. */
let acme: Tenant;
let ssoConnection: string;
/** Requires a second factor of its members; its connection serves MFA_DOMAIN without requiring it. */
let beta: Tenant;
let betaConnection: string;
let platformConnection: string;

/** A person of the SSO domain who signed up with a password and a passkey before the domain required SSO. */
const pat = { email: `pat@${SSO_DOMAIN}`, key: null as unknown as SoftPasskey, totp: '' };
/** Members of beta: one with no factor, one with an authenticator app, one with a passkey only. */
const beta0 = { email: `none-${Date.now()}@example.test`, id: '' };
const betaTotp = { email: `app-${Date.now()}@example.test`, secret: '' };
const betaKey = { email: `key-${Date.now()}@example.test`, key: null as unknown as SoftPasskey };

/** Every request comes from 127.0.0.1: each sign-in row starts after the throttle's window of those before it. */
const freshWindow = () => clock.advance(16 * MINUTE);

async function invite(owner: Client, organizationId: string, email: string, role = 'member'): Promise<Client> {
  const invited = await owner.post(`/v1/organizations/${organizationId}/invitations`, { email, role });
  expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  // The mailed link, as the invitee's mailbox would use it: it proves the address.
  const token = await mailedInvitationToken(server.url, email);
  const accepted = await client(server.url).post('/api/v1/invitations/accept', { token, name: email, password: PASSWORD });
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  return client(server.url, { token: accepted.body.token });
}

async function addPasskey(api: Client, name: string): Promise<SoftPasskey> {
  const key = new SoftPasskey({ origin: server.origin });
  const options = await api.post('/api/v1/users/me/passkeys/options', { password: PASSWORD });
  expect(options.status, JSON.stringify(options.body)).toBe(200);
  const registered = await api.post('/api/v1/users/me/passkeys', { name, response: key.register(options.body) });
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  return key;
}

const anonymous = () => client(server.url);
const passwordLogin = (email: string) => anonymous().post('/api/v1/auth/login', { email, password: PASSWORD });

async function passkeyLogin(key: SoftPasskey, mfaToken?: string) {
  const options = await anonymous().post('/api/v1/auth/passkeys/options');
  expect(options.status, JSON.stringify(options.body)).toBe(200);
  return anonymous().post('/api/v1/auth/passkeys/verify', { response: key.authenticate(options.body), ...(mfaToken ? { mfa_token: mfaToken } : {}) });
}

async function codeLogin(email: string, secret: string) {
  const challenge = await passwordLogin(email);
  expect(challenge.body.mfa_required, JSON.stringify(challenge.body)).toBe(true);
  toMidStep(clock);
  return anonymous().post('/api/v1/auth/login/mfa', { mfa_token: challenge.body.mfa_token, code: codeAt(clock, secret) });
}

/** The reset link's token mailed to `email` (the worker writes the mail). */
async function resetToken(email: string): Promise<string> {
  const before = await server.base.db.mail.count({ where: { toAddress: email, kind: 'password_reset' } });
  expect((await anonymous().post('/api/v1/auth/password-reset', { email })).status).toBe(202);
  const mail = await waitFor(async () => {
    const mails = await server.base.db.mail.findMany({ where: { toAddress: email, kind: 'password_reset' }, orderBy: { createdAt: 'asc' } });
    return mails.length > before ? mails[mails.length - 1] : undefined;
  });
  return /reset-password\?token=([A-Za-z0-9_-]+)/.exec(mail.textBody ?? '')![1]!;
}

/** Where a portal page sends a session: its status and the path of its redirect. */
async function portalPage(token: string, path: string) {
  const res = await fetch(`${server.url}${path}`, { headers: { cookie: `tessera_session=${token}` }, redirect: 'manual' });
  await res.arrayBuffer();
  const location = res.headers.get('location');
  return { status: res.status, to: location ? new URL(location, server.url).pathname : null };
}

/** A refusal of the sign-in policy: the status, the error and that no session came with it. */
interface Outcome {
  status: number;
  error?: string;
  token?: string;
  mfaEnrollmentRequired?: boolean;
}
const outcomeOf = (reply: { status: number; body: any }): Outcome => ({
  status: reply.status, error: reply.body?.error, token: reply.body?.token, mfaEnrollmentRequired: reply.body?.mfa_enrollment_required,
});

beforeAll(async () => {
  dns = await startDnsServer();
  ca = makeTestCa(['idp.test']);
  upstream = await startOidcUpstream(ca);
  server = await startPasskeyServer({
    clock, role: 'all',
    env: { DNS_SERVERS: dns.address, WEBHOOK_CA_FILE: ca.caFile },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;

  acme = await createTenant(server.url, platform, 'Acme ways');
  await proveDomain(acme.owner.api, dns, SSO_DOMAIN);
  const patApi = await invite(acme.owner.api, acme.id, pat.email);
  pat.key = await addPasskey(patApi, 'Pat key');
  pat.totp = (await enrolTotp(patApi, clock)).secret;
  upstream.addAccount({ sub: 'pat-1', email: pat.email, email_verified: true, name: 'Pat' });
  upstream.addAccount({ sub: 'newcomer-1', email: `newcomer@${SSO_DOMAIN}`, email_verified: true, name: 'Newcomer' });
  const oidc = { issuer: upstream.issuer, client_id: upstream.clientId, client_secret: upstream.clientSecret, scopes: ['openid', 'email', 'profile'] };
  const created = await acme.owner.api.post('/api/v1/connections', { type: 'oidc', name: 'Acme IdP', domains: [SSO_DOMAIN], default_role: 'member', ...oidc });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  ssoConnection = created.body.id;
  upstream.redirectUris.add(created.body.callback_url);
  const social = await platform.post('/api/v1/connections', { type: 'oidc', platform: true, name: 'Social', ...oidc });
  expect(social.status, JSON.stringify(social.body)).toBe(201);
  platformConnection = social.body.id;
  upstream.redirectUris.add(social.body.callback_url);

  beta = await createTenant(server.url, platform, 'Beta ways');
  await invite(beta.owner.api, beta.id, beta0.email);
  beta0.id = (await server.base.db.user.findUniqueOrThrow({ where: { email: beta0.email } })).id;
  betaTotp.secret = (await enrolTotp(await invite(beta.owner.api, beta.id, betaTotp.email), clock)).secret;
  betaKey.key = await addPasskey(await invite(beta.owner.api, beta.id, betaKey.email), 'Beta key');
  await proveDomain(beta.owner.api, dns, MFA_DOMAIN);
  upstream.addAccount({ sub: 'sam-1', email: `sam@${MFA_DOMAIN}`, email_verified: true, name: 'Sam' });
  const betaIdp = await beta.owner.api.post('/api/v1/connections', { type: 'oidc', name: 'Beta IdP', domains: [MFA_DOMAIN], default_role: 'member', ...oidc });
  expect(betaIdp.status, JSON.stringify(betaIdp.body)).toBe(201);
  betaConnection = betaIdp.body.id;
  upstream.redirectUris.add(betaIdp.body.callback_url);
  await enrolTotp(beta.owner.api, clock);
  expect((await beta.owner.api.patch(`/v1/organizations/${beta.id}`, { require_mfa: true })).status).toBe(200);
  const product = await platform.post('/v1/products', { name: 'Ways', slug: 'ways', features: ['a'] });
  const subscription = await platform.post('/api/v1/subscriptions', {
    organization_id: beta.id, product_id: product.body.id, total_seats: 5, price_per_seat: 1, billing_cycle: 'monthly', status: 'active',
  });
  expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
}, 120_000);
afterAll(async () => {
  await server?.stop();
  await upstream?.close();
  await dns?.stop();
  ca?.remove();
});

/** Turns require_sso on for SSO_DOMAIN's connection; the password step has handed out mfa_tokens before. */
const earlyMfaTokens: string[] = [];
async function requireSso() {
  for (let i = 0; i < 2; i++) earlyMfaTokens.push((await passwordLogin(pat.email)).body.mfa_token);
  expect(earlyMfaTokens).toEqual([expect.any(String), expect.any(String)]);
  const on = await acme.owner.api.patch(`/api/v1/connections/${ssoConnection}`, { require_sso: true });
  expect(on.status, JSON.stringify(on.body)).toBe(200);
}

describe('require_sso on the address\'s domain: no session but through the connection that serves it', () => {
  beforeAll(requireSso);

  const refused = (o: Outcome) => {
    expect(o.status, JSON.stringify(o)).toBe(403);
    expect(o.error).toBe('sso_required');
    expect(o.token).toBeUndefined();
  };

  it.each<[string, () => Promise<Outcome>, (o: Outcome) => void]>([
    ['password', async () => outcomeOf(await passwordLogin(pat.email)), refused],
    // The password step of a moment before SSO was required gave an mfa_token; its second step is refused as well.
    ['second factor (TOTP) after the password step', async () => {
      toMidStep(clock);
      return outcomeOf(await anonymous().post('/api/v1/auth/login/mfa', { mfa_token: earlyMfaTokens[0], code: codeAt(clock, pat.totp) }));
    }, refused],
    // T7: a passkey answered 200 with a session.
    ['passkey, without a password', async () => outcomeOf(await passkeyLogin(pat.key)), refused],
    ['passkey, as the second step of a password', async () => outcomeOf(await passkeyLogin(pat.key, earlyMfaTokens[1])), refused],
    ['invitation accepted with the password of the existing account', async () => {
      const invited = await beta.owner.api.post(`/v1/organizations/${beta.id}/invitations`, { email: pat.email, role: 'member' });
      expect(invited.status, JSON.stringify(invited.body)).toBe(201);
      const token = await mailedInvitationToken(server.url, pat.email);
      return outcomeOf(await anonymous().post('/api/v1/invitations/accept', { token, password: PASSWORD }));
    }, refused],
    ['password reset: the link sets the password and makes no session; signing in with it is refused', async () => {
      const confirmed = await anonymous().post('/api/v1/auth/password-reset/confirm', { token: await resetToken(pat.email), password: PASSWORD });
      expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(204);
      expect(confirmed.headers.get('set-cookie')).toBeNull();
      return outcomeOf(await passwordLogin(pat.email));
    }, refused],
  ])('%s', async (_way, attempt, expectation) => {
    expectation(await attempt());
  });

  it('a platform-wide provider: refused for an address of the domain, with the reason, and no session', async () => {
    upstream.signInAs('newcomer-1');
    const result = await ssoSignInThroughOidc(server.origin, platformConnection, ca);
    expect(new URL(result.location, server.url).searchParams.get('sso_error'), result.location).toBe('sso_required');
    expect(result.session).toBeNull();
    expect(await server.base.db.user.count({ where: { email: `newcomer@${SSO_DOMAIN}` } })).toBe(0);
  });

  it('the connection that serves the domain: signs the person in', async () => {
    upstream.signInAs('pat-1');
    const result = await ssoSignInThroughOidc(server.origin, ssoConnection, ca);
    expect(result.session, result.location).toMatch(/^tss_/);
    expect((await client(server.url, { token: result.session! }).get('/api/v1/users/me')).body.email).toBe(pat.email);
  });
});

describe('require_mfa on the organization: whichever way in, nothing of it without a factor', () => {
  /** What a session without a factor must not get in beta, and what one with a factor gets. */
  async function expectHeldBack(token: string) {
    const api = client(server.url, { token });
    for (const path of ['/api/v1/licenses/entitlements', '/api/v1/licenses/check?product=ways']) {
      const reply = await api.get(path);
      expect(reply.status, `${path} ${JSON.stringify(reply.body)}`).toBe(403);
      expect(reply.body.error, path).toBe('mfa_enrollment_required');
    }
    const graphql = await api.post('/graphql', { query: '{ myLicenses { licenses } }' });
    expect(graphql.body.errors?.[0]?.extensions?.code, JSON.stringify(graphql.body)).toBe('mfa_enrollment_required');
    for (const path of ['/portal/dashboard', '/portal/oauth-clients']) {
      expect(await portalPage(token, path), path).toEqual({ status: 303, to: '/portal/security' });
    }
    expect((await portalPage(token, '/portal/security')).status).toBe(200);
  }
  async function expectLetIn(token: string) {
    const api = client(server.url, { token });
    expect((await api.get('/api/v1/licenses/entitlements')).status).toBe(200);
    expect((await api.get('/api/v1/licenses/check?product=ways')).status).toBe(200);
    expect((await portalPage(token, '/portal/dashboard')).status).toBe(200);
  }

  it.each<[string, () => Promise<Outcome>, boolean]>([
    ['password, no factor: a session flagged for enrolment', async () => outcomeOf(await passwordLogin(beta0.email)), true],
    ['password + TOTP', async () => outcomeOf(await codeLogin(betaTotp.email, betaTotp.secret)), false],
    ['passkey', async () => outcomeOf(await passkeyLogin(betaKey.key)), false],
    ['single sign-on, no factor: a session flagged for enrolment', async () => {
      upstream.signInAs('sam-1');
      const result = await ssoSignInThroughOidc(server.origin, betaConnection, ca);
      expect(result.session, result.location).toMatch(/^tss_/);
      const session = await client(server.url, { token: result.session! }).get('/api/v1/auth/session');
      expect(session.body.organization?.id).toBe(beta.id);
      return { status: 200, token: result.session!, mfaEnrollmentRequired: true };
    }, true],
  ])('%s', async (_way, attempt, awaitingFactor) => {
    freshWindow();
    const outcome = await attempt();
    expect(outcome.status, JSON.stringify(outcome)).toBe(200);
    expect(outcome.token).toMatch(/^tss_/);
    expect(!!outcome.mfaEnrollmentRequired).toBe(awaitingFactor);
    await (awaitingFactor ? expectHeldBack(outcome.token!) : expectLetIn(outcome.token!));
  });

  it('an invitation accepted with the password of an account with a factor: the second step, no session', async () => {
    freshWindow();
    const invited = await acme.owner.api.post(`/v1/organizations/${acme.id}/invitations`, { email: betaTotp.email, role: 'member' });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    const token = await mailedInvitationToken(server.url, betaTotp.email);
    const accepted = await anonymous().post('/api/v1/invitations/accept', { token, password: PASSWORD });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body).toMatchObject({ mfa_required: true, mfa_token: expect.any(String) });
    expect(accepted.body.token).toBeUndefined();
    expect(accepted.headers.get('set-cookie')).toBeNull();
  });

  it('a password reset makes no session: the person with a factor still meets the second step', async () => {
    freshWindow();
    const confirmed = await anonymous().post('/api/v1/auth/password-reset/confirm', { token: await resetToken(betaTotp.email), password: PASSWORD });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(204);
    expect(confirmed.headers.get('set-cookie')).toBeNull();
    const login = await passwordLogin(betaTotp.email);
    expect(login.body).toMatchObject({ mfa_required: true });
    expect(login.body.token).toBeUndefined();
  });
});
