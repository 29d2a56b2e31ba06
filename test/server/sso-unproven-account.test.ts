// Linking by address (docs/architecture.md#single-sign-on, "Who signs in"): a sign-in through an organization's
// connection joins an existing account by its address only when the address was proven. An account whose address
// nobody proved (account pre-hijacking, Sudhodanan and Paverd 2022: an attacker made it first) is taken over only after
// every credential it holds is removed; a platform-wide provider never joins one at all. Against real oidc-providers
// over HTTPS, a real DNS check, and passkeys and TOTP through the routes.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { client, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import type { TestDnsServer } from '../helpers/dns.ts';
import type { TestCa } from '../helpers/https-receiver.ts';
import type { CookieJar, OidcUpstream } from '../helpers/oidc-upstream.ts';
import { addOidcConnection, proveDomain, ssoSignInThroughOidc, startSsoStage, type SsoStage } from '../helpers/sso.ts';
import { addPasskey, passkeySignIn as passkeySignInAt, type SoftPasskey } from '../helpers/webauthn.ts';
import { movableClock } from '../helpers/clock.ts';
import { enrolTotp } from '../helpers/totp.ts';
import {
  authorize,
  codeFrom,
  exchangeCode,
  registerClient,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';

const clock = movableClock();
let stage: SsoStage;
let server: TestServer & { origin: string };
let smtp: TestSmtp;
let dns: TestDnsServer;
let ca: TestCa;
let acmeIdp: OidcUpstream;
let social: OidcUpstream;
let platform: Client;
let acme: Tenant;
let evil: Tenant;
let acmeConnection: string;
let socialConnection: string;
let app: RegisteredClient;

const REDIRECT = 'https://app.evil.test/callback';
const errorOf = (location: string) => new URL(location, 'http://x').searchParams.get('sso_error');
const session = (token: string | null) => client(server.url, { token: token ?? undefined });
const withSession = (token: string): CookieJar =>
  new Map([[new URL(server.origin).host, new Map([['tessera_session', token]])]]);
const login = (email: string, password = PASSWORD) =>
  client(server.url).post('/api/v1/auth/login', { email, password });

beforeAll(async () => {
  smtp = await startTestSmtp();
  stage = await startSsoStage({
    clock,
    hosts: ['idp.test', 'accounts.test'],
    // The worker too: it sends the reset links.
    role: 'all',
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Tessera Test <id@tessera.test>' },
  });
  ({ server, dns, ca, platform } = stage);
  [acmeIdp, social] = stage.upstreams as [OidcUpstream, OidcUpstream];
  acme = await createTenant(server.url, platform, 'Acme');
  evil = await createTenant(server.url, platform, 'Evil');
  socialConnection = await addOidcConnection(platform, social, { platform: true, name: 'Accounts' });
  app = await registerClient(evil.owner.api, {
    name: 'Evil app',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'offline_access', 'api'],
    consent_required: false,
  });
});
afterAll(async () => {
  await stage?.stop();
  await smtp?.close();
});

/**
 * An account for `email` whose address nobody proved, as an attacker leaves it: made through another organization's
 * invitation whose token the inviter held (so the mailbox never answered), then armed with everything that signs in.
 */
async function preHijacked(email: string) {
  const invitation = await evil.owner.api.post(`/v1/organizations/${evil.id}/invitations`, { email, role: 'admin' });
  expect(invitation.status, JSON.stringify(invitation.body)).toBe(201);
  const accepted = await client(server.url).post('/api/v1/invitations/accept', {
    token: invitation.body.token,
    name: 'Attacker',
    password: PASSWORD,
  });
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  const person: Person = {
    id: accepted.body.user.id,
    email,
    token: accepted.body.token,
    api: session(accepted.body.token),
  };
  expect((await person.api.get('/api/v1/users/me')).body.email_verified).toBe(false);
  const { key: passkey } = await addPasskey(person.api, server.origin, 'Attacker laptop');
  const totp = await enrolTotp(person.api, clock);
  const key = await person.api.post('/api/v1/api-keys', { name: 'Attacker key', role: 'admin' });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  const back = await authorize(server.url, person.token, {
    client_id: app.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid offline_access api',
    nonce: 'n',
    state: 's',
  });
  const tokens = await exchangeCode(server.url, app, codeFrom(back), REDIRECT);
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  expect(tokens.body.refresh_token).toBeTruthy();
  // The attacker's own account at a platform provider, connected to this one.
  social.addAccount({
    sub: `attacker-of-${email}`,
    email: `attacker+${person.id}@evil.test`,
    email_verified: true,
    name: 'Attacker',
  });
  social.signInAs(`attacker-of-${email}`);
  const linked = await ssoSignInThroughOidc(server.origin, socialConnection, ca, {
    query: { link: '1' },
    jar: withSession(person.token),
  });
  expect(new URL(linked.location).search).toBe('?linked=1');
  return {
    person,
    passkey,
    totp,
    apiKey: key.body as { key: string; secret: string },
    tokens: tokens.body as { access_token: string; refresh_token: string },
  };
}

const passkeySignIn = (passkey: SoftPasskey) => passkeySignInAt(server.url, passkey);

describe('an account whose address was never proven', () => {
  let hijack: Awaited<ReturnType<typeof preHijacked>>;

  beforeAll(async () => {
    // T5: the attacker holds ceo@acme.test first; only later does Acme prove the domain and turn SSO on.
    hijack = await preHijacked('ceo@acme.test');
    expect((await passkeySignIn(hijack.passkey)).status).toBe(200);
    await proveDomain(acme.owner.api, dns, 'acme.test');
    acmeConnection = await addOidcConnection(acme.owner.api, acmeIdp, {
      name: 'Acme IdP',
      domains: ['acme.test'],
      require_sso: true,
    });
  });

  it("is taken over by the real person's first sign-in through the domain's connection only after everything the attacker holds is gone", async () => {
    const ceoId = hijack.person.id;
    acmeIdp.addAccount({ sub: 'ceo-1', email: 'ceo@acme.test', email_verified: true, name: 'The CEO' });
    acmeIdp.signInAs('ceo-1');
    const result = await ssoSignInThroughOidc(server.origin, acmeConnection, ca);
    expect(result.session, result.location).toMatch(/^tss_/);
    const me = await session(result.session).get('/api/v1/users/me');
    expect(me.body).toMatchObject({ id: ceoId, email: 'ceo@acme.test' });
    expect((await session(result.session).get('/api/v1/auth/session')).body.organization).toMatchObject({
      id: acme.id,
      role: 'member',
    });

    // The attacker's session, passkey, password, authenticator app and recovery codes open nothing.
    expect((await hijack.person.api.get('/api/v1/auth/session')).status).toBe(401);
    expect((await hijack.person.api.get(`/v1/organizations/${acme.id}`)).status).toBe(401);
    const byPasskey = await passkeySignIn(hijack.passkey);
    expect(byPasskey.status, JSON.stringify(byPasskey.body)).not.toBe(200);
    expect(byPasskey.body?.token).toBeUndefined();
    // The address requires SSO now; the password is gone either way (no mfa_token, no session).
    const byPassword = await login('ceo@acme.test');
    expect(byPassword.status).not.toBe(200);
    expect(byPassword.body?.mfa_token).toBeUndefined();
    expect(await server.base.db.passkey.count({ where: { userId: ceoId } })).toBe(0);
    expect(await server.base.db.totpFactor.count({ where: { userId: ceoId } })).toBe(0);
    expect(await server.base.db.recoveryCode.count({ where: { userId: ceoId } })).toBe(0);
    // Of the account's sessions only the one just made is live.
    const user = await server.base.db.user.findUniqueOrThrow({ where: { id: ceoId } });
    expect(
      await server.base.db.session.count({
        where: { userId: ceoId, revokedAt: null, sessionVersion: user.sessionVersion },
      }),
    ).toBe(1);
    // The attacker's session ended as every ending does (endSessions), told to the organizations it was in.
    const attackers = await server.base.db.session.findUniqueOrThrow({
      where: { tokenHash: createHash('sha256').update(hijack.person.token).digest('hex') },
    });
    expect(attackers.revokedAt).not.toBeNull();
    expect(
      await server.base.db.event.count({
        where: { kind: 'session.revoked', organizationId: evil.id, body: { contains: attackers.id } },
      }),
    ).toBe(1);

    // Its API key, access token and refresh token are dead.
    expect((await client(server.url, { apiKey: hijack.apiKey }).get('/api/v1/users/me')).status).toBe(401);
    expect((await client(server.url, { token: hijack.tokens.access_token }).get('/api/v1/users/me')).status).toBe(401);
    const refreshed = await tokenRequest(server.url, {
      grant_type: 'refresh_token',
      refresh_token: hijack.tokens.refresh_token,
      client_id: app.client_id,
      client_secret: app.client_secret,
    });
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe('invalid_grant');

    // The attacker's provider account no longer signs in to this account; the person's own connection does.
    social.signInAs(`attacker-of-ceo@acme.test`);
    const viaSocial = await ssoSignInThroughOidc(server.origin, socialConnection, ca);
    expect(viaSocial.session, viaSocial.location).toMatch(/^tss_/);
    expect((await session(viaSocial.session).get('/api/v1/users/me')).body).toMatchObject({
      email: `attacker+${ceoId}@evil.test`,
    });
    const identities = await server.base.db.ssoIdentity.findMany({
      where: { userId: ceoId },
      select: { connectionId: true, subject: true },
    });
    expect(identities).toEqual([{ connectionId: acmeConnection, subject: 'ceo-1' }]);

    // The connection vouched for the address: it is proven now.
    expect((await session(result.session).get('/api/v1/users/me')).body.email_verified).toBe(true);
    const audit = await server.base.db.auditLog.findMany({ where: { targetId: ceoId, action: 'account.take_over' } });
    expect(audit).toHaveLength(1);
    expect(audit[0]!.details).toMatchObject({
      via: 'sso',
      connectionId: acmeConnection,
      passkeys: 1,
      totp: true,
      apiKeys: 1,
      identities: 1,
    });

    // The next sign-in is an ordinary one: the same account, nothing more removed.
    const again = await ssoSignInThroughOidc(server.origin, acmeConnection, ca);
    expect((await session(again.session).get('/api/v1/users/me')).body.id).toBe(ceoId);
    expect((await session(result.session).get('/api/v1/auth/session')).status).toBe(200);
  });
});

describe("a reset link to an unproven account's address", () => {
  it("gives the mailbox's holder the account only once what the attacker set up is gone", async () => {
    // given an account an attacker made for an address that is not theirs, armed as before
    const hijack = await preHijacked('founder@startup.test');
    const id = hijack.person.id;

    // when the address's real holder asks for a reset link and uses it
    expect(
      (await client(server.url).post('/api/v1/auth/password-reset', { email: 'founder@startup.test' })).status,
    ).toBe(202);
    const [mail] = await smtp.waitForMail('founder@startup.test', /Reset your/);
    const token = smtp.linkIn(mail!, '/reset-password').searchParams.get('token')!;
    const confirmed = await client(server.url).post('/api/v1/auth/password-reset/confirm', {
      token,
      password: "the real founder's password",
    });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(204);

    // then the attacker's session, passkey, password, API key and tokens open nothing
    expect((await hijack.person.api.get('/api/v1/auth/session')).status).toBe(401);
    expect((await passkeySignIn(hijack.passkey)).status).not.toBe(200);
    expect((await login('founder@startup.test')).status).toBe(401);
    expect((await client(server.url, { apiKey: hijack.apiKey }).get('/api/v1/users/me')).status).toBe(401);
    expect((await client(server.url, { token: hijack.tokens.access_token }).get('/api/v1/users/me')).status).toBe(401);
    expect(
      (
        await tokenRequest(server.url, {
          grant_type: 'refresh_token',
          refresh_token: hijack.tokens.refresh_token,
          client_id: app.client_id,
          client_secret: app.client_secret,
        })
      ).body.error,
    ).toBe('invalid_grant');
    expect(await server.base.db.ssoIdentity.count({ where: { userId: id } })).toBe(0);
    // and the new password signs in with no second factor left to ask for: the attacker's app is gone too
    const signedIn = await login('founder@startup.test', "the real founder's password");
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
    expect(signedIn.body.token).toMatch(/^tss_/);
    expect((await session(signedIn.body.token).get('/api/v1/users/me')).body).toMatchObject({
      id,
      email_verified: true,
    });
    const audit = await server.base.db.auditLog.findMany({ where: { targetId: id, action: 'account.take_over' } });
    expect(audit.map((a) => a.details)).toEqual([
      expect.objectContaining({ via: 'password_reset', passkeys: 1, totp: true, apiKeys: 1, identities: 1 }),
    ]);
  });
});

describe('an account whose address was proven', () => {
  it('is linked as before: its password and passkeys stay', async () => {
    const person = await addPerson(server.url, acme.owner.api, acme.id, 'member', 'proven');
    const [local] = person.email.split('@');
    const email = `${local}@acme.test`;
    await server.base.db.user.update({ where: { id: person.id }, data: { email, emailVerified: true } });
    const { key: passkey } = await addPasskey(person.api, server.origin, 'Mine');
    acmeIdp.addAccount({ sub: `proven-${person.id}`, email, email_verified: true, name: 'Proven' });
    acmeIdp.signInAs(`proven-${person.id}`);
    const result = await ssoSignInThroughOidc(server.origin, acmeConnection, ca);
    expect((await session(result.session).get('/api/v1/users/me')).body.id).toBe(person.id);
    expect((await person.api.get('/api/v1/auth/session')).status).toBe(200);
    expect(await server.base.db.passkey.count({ where: { userId: person.id } })).toBe(1);
    // the passkey still proves the person; Acme requires SSO for its domain, so it is the policy that refuses it
    const withPasskey = await passkeySignIn(passkey);
    expect(withPasskey.status, JSON.stringify(withPasskey.body)).toBe(403);
    expect(withPasskey.body.error).toBe('sso_required');
    expect(await server.base.db.auditLog.count({ where: { targetId: person.id, action: 'account.take_over' } })).toBe(
      0,
    );
  });
});

describe('a platform-wide provider', () => {
  it('never joins an existing account, proven or not, and changes nothing of it', async () => {
    for (const verified of [false, true]) {
      const person = await addPerson(server.url, evil.owner.api, evil.id, 'member', `social-${verified}`);
      await server.base.db.user.update({ where: { id: person.id }, data: { emailVerified: verified } });
      social.addAccount({ sub: `social-${person.id}`, email: person.email, email_verified: true, name: 'Someone' });
      social.signInAs(`social-${person.id}`);
      const result = await ssoSignInThroughOidc(server.origin, socialConnection, ca);
      expect(errorOf(result.location)).toBe('account_exists');
      expect(result.session).toBeNull();
      expect(await server.base.db.ssoIdentity.count({ where: { userId: person.id } })).toBe(0);
      expect((await server.base.db.user.findUniqueOrThrow({ where: { id: person.id } })).emailVerified).toBe(verified);
      expect((await person.api.get('/api/v1/auth/session')).status).toBe(200);
      expect((await login(person.email)).status).toBe(200);
    }
  });
});
