// Every way in honours the organizations' sign-in policy the same way (docs/architecture.md#single-sign-on and
// #second-factors). Two tables, one per policy, with one row per way in, named alike (WAYS_IN): a way in added to the
// list is a missing row in both until each says what it does.
// - require_sso: an address of a domain whose connection requires single sign-on gets no session but through that
//   connection, whichever way it comes.
// - require_mfa: a member of an organization that requires a second factor meets the second step when they have a
//   factor, and otherwise gets a session held back from the organization (no licences, no portal pages but
//   Security) until they set one up, whichever way they came in.
// A device code is a way in for the device: the session that approves it must be one the policy admits now.
// Each row over real HTTP against a real OpenID Connect provider, a software authenticator and DNS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type Client } from '../helpers/http.ts';
import {
  addPerson,
  createTenant,
  mailedInvitationToken,
  PASSWORD,
  type Person,
  type Tenant,
} from '../helpers/fixtures.ts';
import { movableClock } from '../helpers/clock.ts';
import type { CookieJar, OidcUpstream } from '../helpers/oidc-upstream.ts';
import {
  addOidcConnection,
  proveDomain,
  ssoSignInThroughOidc,
  startSsoStage,
  type SsoSignInResult,
  type SsoStage,
} from '../helpers/sso.ts';
import { codeAt, enrolTotp, toMidStep } from '../helpers/totp.ts';
import { addPasskey, passkeySignIn, type SoftPasskey } from '../helpers/webauthn.ts';
import { waitFor } from '../helpers/wait.ts';
import { registerClient, tokenRequest } from '../helpers/oauth.ts';

/** Every way to a session. */
const WAYS_IN = [
  'password',
  'second factor: a TOTP code',
  'second factor: a recovery code',
  'passkey alone',
  'passkey as the second step',
  'organization SSO',
  'platform-wide SSO',
  'device code',
  'the command line (tessera login)',
  'password reset',
  'invitation accepted with a password',
  'invitation accepted inside a session',
  'invitation accepted creating an account',
] as const;
type WayIn = (typeof WAYS_IN)[number];

/** What a way in answered: an API's status and body, or where a browser's sign-in through a provider ended. */
interface Outcome {
  status: number;
  /** The error code (an API's `error`, a provider sign-in's `sso_error`). */
  error?: string;
  token?: string;
  mfaToken?: string;
  mfaEnrollmentRequired?: boolean;
  /** Whether the answer set a cookie (a session or a device cookie). */
  setCookie: boolean;
  /** A sign-in through a provider: a browser's redirect, whose answer carries no body. */
  browser?: boolean;
}
/** A way in under one policy: the attempt, and what must hold of its outcome. */
interface Row {
  attempt: () => Promise<Outcome>;
  then: (outcome: Outcome) => void | Promise<void>;
}
const rowsOf = (table: Record<WayIn, Row>) => WAYS_IN.map((way) => [way, table[way]] as const);

const SSO_DOMAIN = 'ways-sso.test';
const MFA_DOMAIN = 'ways-mfa.test';
const clock = movableClock();
let stage: SsoStage;
let upstream: OidcUpstream;
/** Requires single sign-on for SSO_DOMAIN through `ssoConnection` (turned on by the require_sso table). */
let acme: Tenant;
let ssoConnection: string;
/** Requires a second factor of its members; its connection serves MFA_DOMAIN without requiring single sign-on. */
let beta: Tenant;
let betaConnection: string;
/** An organization that requires nothing: its people are invited elsewhere. */
let gamma: Tenant;
let platformConnection: string;

/** Of the SSO domain, signed up with a password, a passkey and an authenticator app before the domain required SSO. */
let pat: Person & { key: SoftPasskey; totp: string; recoveryCodes: string[] };
/** Members of beta: with no factor (and connected to the platform-wide provider), with an authenticator app, with a passkey only. */
let beta0: Person;
let betaTotp: Person & { secret: string; recoveryCodes: string[] };
let betaKey: Person & { key: SoftPasskey };

const url = () => stage.server.url;
const anonymous = () => client(url());
const db = () => stage.server.base.db;

const outcomeOf = (reply: { status: number; body: any; headers: Headers }): Outcome => ({
  status: reply.status,
  error: reply.body?.error,
  token: reply.body?.token,
  mfaToken: reply.body?.mfa_token,
  mfaEnrollmentRequired: reply.body?.mfa_enrollment_required,
  setCookie: reply.headers.get('set-cookie') !== null,
});
const ssoOutcomeOf = (result: SsoSignInResult): Outcome => ({
  status: Number(/^\((\d+)\)$/.exec(result.location)?.[1] ?? 303),
  error: new URL(result.location, url()).searchParams.get('sso_error') ?? undefined,
  token: result.session ?? undefined,
  setCookie: result.session !== null,
  browser: true,
});

const passwordLogin = (email: string) => anonymous().post('/api/v1/auth/login', { email, password: PASSWORD });

/** The password step of an account with a factor: its mfa_token. */
async function mfaTokenOf(email: string): Promise<string> {
  const challenge = await passwordLogin(email);
  expect(challenge.body.mfa_required, JSON.stringify(challenge.body)).toBe(true);
  return challenge.body.mfa_token;
}
async function codeStep(mfaToken: string, secret: string) {
  toMidStep(clock);
  return outcomeOf(
    await anonymous().post('/api/v1/auth/login/mfa', { mfa_token: mfaToken, code: codeAt(clock, secret) }),
  );
}
const recoveryStep = async (mfaToken: string, code: string) =>
  outcomeOf(await anonymous().post('/api/v1/auth/login/mfa', { mfa_token: mfaToken, recovery_code: code }));

/** A browser that carries the session `token` (a sign-in through a provider started signed in, to connect it). */
const withSession = (token: string): CookieJar =>
  new Map([[new URL(stage.server.origin).host, new Map([['tessera_session', token]])]]);

/** Invites `email` to `organizationId`; the mailed link's token, as the invitee's mailbox would have it. */
async function invitationFor(owner: Client, organizationId: string, email: string): Promise<string> {
  const invited = await owner.post(`/v1/organizations/${organizationId}/invitations`, { email, role: 'member' });
  expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  return (await mailedInvitationToken(url(), email))!;
}

/** The reset link's token mailed to `email` (the worker writes the mail). */
async function resetToken(email: string): Promise<string> {
  const before = await db().mail.count({ where: { toAddress: email, kind: 'password_reset' } });
  expect((await anonymous().post('/api/v1/auth/password-reset', { email })).status).toBe(202);
  const mail = await waitFor(async () => {
    const mails = await db().mail.findMany({
      where: { toAddress: email, kind: 'password_reset' },
      orderBy: { createdAt: 'asc' },
    });
    return mails.length > before ? mails[mails.length - 1] : undefined;
  });
  return /reset-password\?token=([A-Za-z0-9_-]+)/.exec(mail.textBody ?? '')![1]!;
}
/** A reset through the mailed link: it sets the password and makes no session; then the password sign-in. */
async function resetThenLogin(email: string): Promise<Outcome> {
  const confirmed = await anonymous().post('/api/v1/auth/password-reset/confirm', {
    token: await resetToken(email),
    password: PASSWORD,
  });
  expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(204);
  expect(confirmed.headers.get('set-cookie')).toBeNull();
  return outcomeOf(await passwordLogin(email));
}

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** A device client of `owner`'s organization: a public client with the device grant. */
const deviceClientOf = async (owner: Client) =>
  (
    await registerClient(owner, {
      name: 'A device',
      token_endpoint_auth_method: 'none',
      redirect_uris: [],
      grant_types: [DEVICE_GRANT],
      allowed_scopes: ['openid'],
    })
  ).client_id;
/**
 * A device's request for `clientId`, answered on /device's operation in the session `token`, then the device's poll:
 * its status, the approval's refusal (or the poll's error) and the access token the device got, if any.
 */
async function deviceApprovedIn(clientId: string, token: string, scope = 'openid'): Promise<Outcome> {
  const started = await anonymous().post(
    '/oauth/device_authorization',
    new URLSearchParams({ client_id: clientId, scope }).toString(),
    { 'content-type': 'application/x-www-form-urlencoded' },
  );
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const decided = await client(url(), { token }).post('/graphql', {
    query: `mutation($c: String!) { decideDeviceRequest(userCode: $c, approve: true) {
      __typename ... on DeviceDecision { approved } ... on UserError { code } } }`,
    variables: { c: started.body.user_code },
  });
  const refusal = decided.body.errors?.[0]?.extensions?.code ?? decided.body.data?.decideDeviceRequest?.code;
  const polled = await tokenRequest(url(), {
    grant_type: DEVICE_GRANT,
    device_code: started.body.device_code,
    client_id: clientId,
  });
  return {
    status: polled.status,
    error: refusal ?? polled.body.error,
    token: polled.body.access_token,
    setCookie: false,
  };
}
/** The device got nothing: the approval refused with `code`, and the device still waits. */
/** Tessera's own command line's device flow (modules/clients/cli-client.ts), approved in the session `token`. */
const cliApprovedIn = (token: string) => deviceApprovedIn('tessera-cli', token, 'openid api');

const deviceRefused = (code: string) => (o: Outcome) => {
  expect(o, JSON.stringify(o)).toMatchObject({ status: 400, error: code, token: undefined });
};
const deviceAdmitted = (o: Outcome) => {
  expect(o.status, JSON.stringify(o)).toBe(200);
  expect(o.token).toEqual(expect.any(String));
};

beforeAll(async () => {
  stage = await startSsoStage({ clock, role: 'all' });
  upstream = stage.upstreams[0]!;
  const { platform, dns } = stage;
  const through = { default_role: 'member' };

  acme = await createTenant(url(), platform, 'Acme ways');
  await proveDomain(acme.owner.api, dns, SSO_DOMAIN);
  const patPerson = await addPerson(url(), acme.owner.api, acme.id, 'member', 'pat', SSO_DOMAIN);
  const patKey = (await addPasskey(patPerson.api, stage.server.origin, 'Pat key')).key;
  const patTotp = await enrolTotp(patPerson.api, clock);
  pat = { ...patPerson, key: patKey, totp: patTotp.secret, recoveryCodes: patTotp.recoveryCodes };
  upstream.addAccount({ sub: 'pat-1', email: pat.email, email_verified: true, name: 'Pat' });
  upstream.addAccount({ sub: 'newcomer-1', email: `newcomer@${SSO_DOMAIN}`, email_verified: true, name: 'Newcomer' });
  ssoConnection = await addOidcConnection(acme.owner.api, upstream, {
    name: 'Acme IdP',
    domains: [SSO_DOMAIN],
    ...through,
  });
  platformConnection = await addOidcConnection(platform, upstream, { platform: true, name: 'Social' });

  gamma = await createTenant(url(), platform, 'Gamma ways');
  beta = await createTenant(url(), platform, 'Beta ways');
  beta0 = await addPerson(url(), beta.owner.api, beta.id, 'member', 'none');
  const appPerson = await addPerson(url(), beta.owner.api, beta.id, 'member', 'app');
  betaTotp = { ...appPerson, ...(await enrolTotp(appPerson.api, clock)) };
  const keyPerson = await addPerson(url(), beta.owner.api, beta.id, 'member', 'key');
  betaKey = { ...keyPerson, key: (await addPasskey(keyPerson.api, stage.server.origin, 'Beta key')).key };
  // beta0 connects the platform-wide provider to the account, as Security's "Connected sign-ins" does.
  upstream.addAccount({ sub: 'none-social', email: beta0.email, email_verified: true, name: 'None' });
  upstream.signInAs('none-social');
  const linked = await ssoSignInThroughOidc(stage.server.origin, platformConnection, stage.ca, {
    query: { link: '1' },
    jar: withSession(beta0.token),
  });
  expect(new URL(linked.location, url()).searchParams.get('linked'), linked.location).toBe('1');
  await proveDomain(beta.owner.api, dns, MFA_DOMAIN);
  upstream.addAccount({ sub: 'sam-1', email: `sam@${MFA_DOMAIN}`, email_verified: true, name: 'Sam' });
  betaConnection = await addOidcConnection(beta.owner.api, upstream, {
    name: 'Beta IdP',
    domains: [MFA_DOMAIN],
    ...through,
  });
  await enrolTotp(beta.owner.api, clock);
  expect((await beta.owner.api.patch(`/v1/organizations/${beta.id}`, { require_mfa: true })).status).toBe(200);
  const product = await platform.post('/v1/products', { name: 'Ways', slug: 'ways', features: ['a'] });
  const subscription = await platform.post('/api/v1/subscriptions', {
    organization_id: beta.id,
    product_id: product.body.id,
    total_seats: 5,
    price_per_seat: 1,
    billing_cycle: 'monthly',
    status: 'active',
  });
  expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
}, 180_000);
afterAll(() => stage?.stop());

describe("require_sso on the address's domain: no session but through the connection that serves it", () => {
  /** mfa_tokens of password steps of a moment before SSO was required: their second steps come after. */
  const early: string[] = [];
  /** A session of pat's from a password and code of a moment before SSO was required. */
  let earlySession = '';
  beforeAll(async () => {
    for (let i = 0; i < 3; i++) early.push(await mfaTokenOf(pat.email));
    const signedIn = await codeStep(await mfaTokenOf(pat.email), pat.totp);
    expect(signedIn.token, JSON.stringify(signedIn)).toMatch(/^tss_/);
    earlySession = signedIn.token!;
    const on = await acme.owner.api.patch(`/api/v1/connections/${ssoConnection}`, { require_sso: true });
    expect(on.status, JSON.stringify(on.body)).toBe(200);
  });

  const refused = (o: Outcome) => {
    expect(o.status, JSON.stringify(o)).toBe(o.browser ? 303 : 403);
    expect(o.error, JSON.stringify(o)).toBe('sso_required');
    expect(o.token).toBeUndefined();
    expect(o.setCookie).toBe(false);
  };
  const admitted = (o: Outcome) => {
    expect(o.status, JSON.stringify(o)).toBe(o.browser ? 303 : 200);
    expect(o.token, JSON.stringify(o)).toMatch(/^tss_/);
    expect(o.error).toBeUndefined();
  };

  const table: Record<WayIn, Row> = {
    password: { attempt: async () => outcomeOf(await passwordLogin(pat.email)), then: refused },
    'second factor: a TOTP code': { attempt: () => codeStep(early[0]!, pat.totp), then: refused },
    'second factor: a recovery code': { attempt: () => recoveryStep(early[1]!, pat.recoveryCodes[0]!), then: refused },
    // T7: a passkey answered 200 with a session.
    'passkey alone': { attempt: async () => outcomeOf(await passkeySignIn(url(), pat.key)), then: refused },
    'passkey as the second step': {
      attempt: async () => outcomeOf(await passkeySignIn(url(), pat.key, early[2])),
      then: refused,
    },
    'organization SSO': {
      attempt: async () => {
        upstream.signInAs('pat-1');
        return ssoOutcomeOf(await ssoSignInThroughOidc(stage.server.origin, ssoConnection, stage.ca));
      },
      then: async (o) => {
        admitted(o);
        expect((await client(url(), { token: o.token }).get('/api/v1/users/me')).body.email).toBe(pat.email);
      },
    },
    'platform-wide SSO': {
      attempt: async () => {
        upstream.signInAs('newcomer-1');
        return ssoOutcomeOf(await ssoSignInThroughOidc(stage.server.origin, platformConnection, stage.ca));
      },
      then: async (o) => {
        refused(o);
        expect(await db().user.count({ where: { email: `newcomer@${SSO_DOMAIN}` } })).toBe(0);
      },
    },
    // Approved in a session of before SSO was required: nothing. In the connection's session: the device's tokens.
    'device code': {
      attempt: async () => deviceApprovedIn(await deviceClientOf(acme.owner.api), earlySession),
      then: async (o) => {
        deviceRefused('sso_required')(o);
        upstream.signInAs('pat-1');
        const { session } = await ssoSignInThroughOidc(stage.server.origin, ssoConnection, stage.ca);
        deviceAdmitted(await deviceApprovedIn(await deviceClientOf(acme.owner.api), session!));
      },
    },
    // The same for the platform-wide client that every signed-in person may approve.
    'the command line (tessera login)': {
      attempt: () => cliApprovedIn(earlySession),
      then: async (o) => {
        deviceRefused('sso_required')(o);
        upstream.signInAs('pat-1');
        const { session } = await ssoSignInThroughOidc(stage.server.origin, ssoConnection, stage.ca);
        deviceAdmitted(await cliApprovedIn(session!));
      },
    },
    'password reset': { attempt: () => resetThenLogin(pat.email), then: refused },
    'invitation accepted with a password': {
      attempt: async () =>
        outcomeOf(
          await anonymous().post('/api/v1/invitations/accept', {
            token: await invitationFor(beta.owner.api, beta.id, pat.email),
            password: PASSWORD,
          }),
        ),
      then: refused,
    },
    // The session to accept in can only be the connection's.
    'invitation accepted inside a session': {
      attempt: async () => {
        const token = await invitationFor(gamma.owner.api, gamma.id, pat.email);
        upstream.signInAs('pat-1');
        const { session } = await ssoSignInThroughOidc(stage.server.origin, ssoConnection, stage.ca);
        return outcomeOf(await client(url(), { token: session! }).post('/api/v1/invitations/accept', { token }));
      },
      then: async (o) => {
        admitted(o);
        expect(await db().membership.count({ where: { userId: pat.id, organizationId: gamma.id } })).toBe(1);
      },
    },
    'invitation accepted creating an account': {
      attempt: async () => {
        const token = await invitationFor(gamma.owner.api, gamma.id, `invited@${SSO_DOMAIN}`);
        return outcomeOf(
          await anonymous().post('/api/v1/invitations/accept', { token, name: 'Invited', password: PASSWORD }),
        );
      },
      then: async (o) => {
        refused(o);
        expect(await db().user.count({ where: { email: `invited@${SSO_DOMAIN}` } })).toBe(0);
      },
    },
  };

  // Before the table: its reset row ends pat's earlier sessions.
  it('a session from before SSO was required mints no fresh one by accepting an invitation', async () => {
    const delta = await createTenant(url(), stage.platform);
    const token = await invitationFor(delta.owner.api, delta.id, pat.email);
    refused(outcomeOf(await client(url(), { token: earlySession }).post('/api/v1/invitations/accept', { token })));
    expect(await db().membership.count({ where: { userId: pat.id, organizationId: delta.id } })).toBe(0);
  });

  it.each(rowsOf(table))('%s', async (_way, row) => {
    await row.then(await row.attempt());
  });
});

describe('require_mfa on the organization: the second step with a factor; without one, nothing of it until one is set up', () => {
  /** The organization a session acts in. */
  const organizationOf = async (token: string) =>
    (await client(url(), { token }).get('/api/v1/auth/session')).body.organization?.id;

  /** A session in beta without a factor: flagged, and refused what beta has (licences, portal pages but Security). */
  async function heldBack(o: Outcome) {
    expect(o.status, JSON.stringify(o)).toBe(o.browser ? 303 : 200);
    expect(o.token, JSON.stringify(o)).toMatch(/^tss_/);
    // A browser's sign-in through a provider carries no body; the refusals below are what hold it back.
    if (!o.browser) expect(o.mfaEnrollmentRequired).toBe(true);
    expect(await organizationOf(o.token!)).toBe(beta.id);
    const api = client(url(), { token: o.token });
    for (const path of ['/api/v1/licenses/entitlements', '/api/v1/licenses/check?product=ways']) {
      const reply = await api.get(path);
      expect(reply.status, `${path} ${JSON.stringify(reply.body)}`).toBe(403);
      expect(reply.body.error, path).toBe('mfa_enrollment_required');
    }
    const graphql = await api.post('/graphql', { query: '{ myLicenses { licenses } }' });
    expect(graphql.body.errors?.[0]?.extensions?.code, JSON.stringify(graphql.body)).toBe('mfa_enrollment_required');
    for (const path of ['/portal/dashboard', '/portal/oauth-clients'])
      expect(await portalPage(o.token!, path), path).toEqual({ status: 303, to: '/portal/security' });
    expect((await portalPage(o.token!, '/portal/security')).status).toBe(200);
  }
  /** A session in beta that used its factor: let in. */
  async function letIn(o: Outcome) {
    expect(o.status, JSON.stringify(o)).toBe(200);
    expect(o.token, JSON.stringify(o)).toMatch(/^tss_/);
    expect(o.mfaEnrollmentRequired).toBeUndefined();
    expect(await organizationOf(o.token!)).toBe(beta.id);
    const api = client(url(), { token: o.token });
    expect((await api.get('/api/v1/licenses/entitlements')).status).toBe(200);
    expect((await api.get('/api/v1/licenses/check?product=ways')).status).toBe(200);
    expect((await portalPage(o.token!, '/portal/dashboard')).status).toBe(200);
  }
  /** A person with a factor: its step, and no session until it. */
  function secondStep(o: Outcome) {
    expect(o.status, JSON.stringify(o)).toBe(200);
    expect(o.mfaToken, JSON.stringify(o)).toEqual(expect.any(String));
    expect(o.token).toBeUndefined();
    expect(o.setCookie).toBe(false);
  }

  const table: Record<WayIn, Row> = {
    password: { attempt: async () => outcomeOf(await passwordLogin(beta0.email)), then: heldBack },
    'second factor: a TOTP code': {
      attempt: async () => codeStep(await mfaTokenOf(betaTotp.email), betaTotp.secret),
      then: letIn,
    },
    'second factor: a recovery code': {
      attempt: async () => recoveryStep(await mfaTokenOf(betaTotp.email), betaTotp.recoveryCodes[0]!),
      then: letIn,
    },
    'passkey alone': { attempt: async () => outcomeOf(await passkeySignIn(url(), betaKey.key)), then: letIn },
    'passkey as the second step': {
      attempt: async () => outcomeOf(await passkeySignIn(url(), betaKey.key, await mfaTokenOf(betaKey.email))),
      then: letIn,
    },
    'organization SSO': {
      attempt: async () => {
        upstream.signInAs('sam-1');
        return ssoOutcomeOf(await ssoSignInThroughOidc(stage.server.origin, betaConnection, stage.ca));
      },
      then: heldBack,
    },
    'platform-wide SSO': {
      attempt: async () => {
        upstream.signInAs('none-social');
        return ssoOutcomeOf(await ssoSignInThroughOidc(stage.server.origin, platformConnection, stage.ca));
      },
      then: heldBack,
    },
    // A session without a factor approves nothing of beta's; one that used its factor does.
    'device code': {
      attempt: async () =>
        deviceApprovedIn(await deviceClientOf(beta.owner.api), (await passwordLogin(beta0.email)).body.token),
      then: async (o) => {
        deviceRefused('mfa_enrollment_required')(o);
        const signedIn = await codeStep(await mfaTokenOf(betaTotp.email), betaTotp.secret);
        deviceAdmitted(await deviceApprovedIn(await deviceClientOf(beta.owner.api), signedIn.token!));
      },
    },
    // Its token acts in every organization of the person: beta holds back one whose sign-in used no factor.
    'the command line (tessera login)': {
      attempt: async () => cliApprovedIn((await passwordLogin(beta0.email)).body.token),
      then: async (o) => {
        deviceAdmitted(o);
        const held = await client(url(), { token: o.token! }).get(`/v1/organizations/${beta.id}`);
        expect(held.status).toBe(403);
        expect(held.body.error).toBe('mfa_enrollment_required');
        const signedIn = await codeStep(await mfaTokenOf(betaTotp.email), betaTotp.secret);
        const withFactor = await cliApprovedIn(signedIn.token!);
        deviceAdmitted(withFactor);
        const members = await client(url(), { token: withFactor.token! }).get(`/v1/organizations/${beta.id}`);
        expect(members.status).toBe(200);
      },
    },
    // The link makes no session; the password after it meets the factor as ever.
    'password reset': { attempt: () => resetThenLogin(betaTotp.email), then: secondStep },
    // Accepting joins beta: the session (moved there, or new) is beta's, and held back like any other.
    'invitation accepted with a password': {
      attempt: async () =>
        outcomeOf(
          await anonymous().post('/api/v1/invitations/accept', {
            token: await invitationFor(beta.owner.api, beta.id, gamma.admin.email),
            password: PASSWORD,
          }),
        ),
      then: heldBack,
    },
    'invitation accepted inside a session': {
      attempt: async () => {
        const token = await invitationFor(beta.owner.api, beta.id, gamma.member.email);
        return outcomeOf(await gamma.member.api.post('/api/v1/invitations/accept', { token }));
      },
      then: heldBack,
    },
    'invitation accepted creating an account': {
      attempt: async () => {
        const token = await invitationFor(beta.owner.api, beta.id, `newcomer-${Date.now()}@example.test`);
        return outcomeOf(
          await anonymous().post('/api/v1/invitations/accept', { token, name: 'Newcomer', password: PASSWORD }),
        );
      },
      then: heldBack,
    },
  };

  it.each(rowsOf(table))('%s', async (_way, row) => {
    await row.then(await row.attempt());
  });
});

/** Where a portal page sends a session: its status and the path of its redirect. */
async function portalPage(token: string, path: string) {
  const res = await fetch(`${url()}${path}`, { headers: { cookie: `tessera_session=${token}` }, redirect: 'manual' });
  await res.arrayBuffer();
  const location = res.headers.get('location');
  return { status: res.status, to: location ? new URL(location, url()).pathname : null };
}
