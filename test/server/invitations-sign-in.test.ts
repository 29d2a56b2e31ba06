// Accepting an invitation is signing in, and only the mailed link proves the address (docs/architecture.md#invitations):
// POST /api/v1/invitations/accept for an account with a second factor answers as login does, an address whose
// domain requires SSO is refused there as at login, and the link the inviter is shown (the create answer's token)
// joins but verifies nothing. The mailed link is read from the development mailbox, as its recipient would.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../schema/lib/crypto.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import {
  addPerson,
  createTenant,
  mailedInvitationToken,
  PASSWORD,
  type Person,
  type Tenant,
} from '../helpers/fixtures.ts';
import { movableClock } from '../helpers/clock.ts';
import { codeAt, enrolTotp, toMidStep, wrongCode } from '../helpers/totp.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { proveDomain } from '../helpers/sso.ts';
import { authorize, codeFrom, exchangeCode, registerClient, type RegisteredClient } from '../helpers/oauth.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';

const clock = movableClock();
const REDIRECT = 'https://app.example.test/cb';
const SSO_DOMAIN = 'sso-only.test';

let dns: TestDnsServer;
let ca: TestCa;
let server: TestServer;
let platform: Client;
let anonymous: Client;
/** The organization that invites (its owner could be anyone: anyone can make an organization). */
let inviter: Tenant;
/** The organization the people invited already belong to. */
let home: Tenant;
let app: RegisteredClient;

beforeAll(async () => {
  dns = await startDnsServer();
  ca = makeTestCa();
  server = await startTestServer({ clock, env: { DNS_SERVERS: dns.address } });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  anonymous = client(server.url);
  inviter = await createTenant(server.url, platform, 'Inviter');
  home = await createTenant(server.url, platform, 'Home');
  app = await registerClient(inviter.owner.api, {
    name: 'Reads the address',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email'],
    consent_required: false,
  });
});
afterAll(async () => {
  await server?.stop();
  await dns?.stop();
});

const newEmail = (label: string, domain = 'example.test') => `${label}-${randomBytes(4).toString('hex')}@${domain}`;
const invite = (email: string, role = 'member') =>
  inviter.owner.api.post(`/v1/organizations/${inviter.id}/invitations`, { email, role });
const accept = (body: Record<string, unknown>, as: Client = anonymous) => as.post('/api/v1/invitations/accept', body);
const membershipsOf = (userId: string) =>
  server.base.db.membership
    .findMany({ where: { userId }, select: { organizationId: true } })
    .then((rows) => rows.map((r) => r.organizationId));
const sessionsOf = (userId: string) => server.base.db.session.count({ where: { userId } });
const statusOf = async (id: string) =>
  (await server.base.db.invitation.findUniqueOrThrow({ where: { id } })).acceptedAt ? 'accepted' : 'pending';

/** The token of the accept link in the newest invitation mail to `email`: the mailbox's link, which proves it. */
const mailedToken = async (email: string) => (await mailedInvitationToken(server.url, email))!;

/** The ID token's claims of a code flow for the session `token`. */
async function idTokenOf(token: string) {
  const back = await authorize(server.url, token, {
    client_id: app.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid email',
    nonce: 'n',
    state: 's',
  });
  const tokens = await exchangeCode(server.url, app, codeFrom(back), REDIRECT);
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return JSON.parse(Buffer.from(tokens.body.id_token.split('.')[1], 'base64url').toString());
}

describe('accepting with the password of an account that has a second factor (T4)', () => {
  let guarded: Person;
  let secret: string;

  beforeAll(async () => {
    // A tenant admin of another organization, with an authenticator app.
    guarded = await addPerson(server.url, home.owner.api, home.id, 'admin', 'guarded');
    ({ secret } = await enrolTotp(guarded.api, clock));
  });

  it('answers mfa_required with an mfa_token and no session, and makes no membership', async () => {
    const created = await invite(guarded.email, 'admin');
    const sessionsBefore = await sessionsOf(guarded.id);

    const reply = await accept({ token: created.body.token, password: PASSWORD });

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expectMatchesOpenApi('POST', '/api/v1/invitations/accept', reply);
    expect(reply.body).toEqual({
      mfa_required: true,
      mfa_token: expect.stringMatching(/^tsm_/),
      expires_at: expect.any(String),
      methods: ['totp', 'recovery_code'],
    });
    expect(reply.headers.get('set-cookie')).toBeNull();
    expect(await sessionsOf(guarded.id)).toBe(sessionsBefore);
    expect(await membershipsOf(guarded.id)).toEqual([home.id]);
    expect(await statusOf(created.body.id)).toBe('pending');
  });

  it('answers the same challenge through GraphQL, where no LoginPayload comes back', async () => {
    const created = await invite(guarded.email);
    const reply = await anonymous.post('/graphql', {
      query: `mutation($input: AcceptInvitationInput!) { acceptInvitation(input: $input) {
        __typename ... on LoginPayload { token } ... on MfaChallenge { mfaRequired mfaToken methods } } }`,
      variables: { input: { token: created.body.token, password: PASSWORD } },
    });
    expect(reply.body.data?.acceptInvitation, JSON.stringify(reply.body)).toEqual({
      __typename: 'MfaChallenge',
      mfaRequired: true,
      mfaToken: expect.stringMatching(/^tsm_/),
      methods: ['totp', 'recovery_code'],
    });
  });

  it('joins only once the second factor has signed the person in, and then inside that session', async () => {
    const created = await invite(guarded.email, 'admin');
    const challenge = await accept({ token: created.body.token, password: PASSWORD });
    expect(challenge.body.mfa_required).toBe(true);

    // A wrong code signs nobody in, and joins nothing.
    toMidStep(clock);
    const wrong = await anonymous.post('/api/v1/auth/login/mfa', {
      mfa_token: challenge.body.mfa_token,
      code: wrongCode(clock, secret),
    });
    expect(wrong.status).toBe(401);
    expect(await membershipsOf(guarded.id)).toEqual([home.id]);

    const signedIn = await anonymous.post('/api/v1/auth/login/mfa', {
      mfa_token: challenge.body.mfa_token,
      code: codeAt(clock, secret),
    });
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
    expect(await membershipsOf(guarded.id)).toEqual([home.id]);

    const joined = await accept({ token: created.body.token }, client(server.url, { token: signedIn.body.token }));
    expect(joined.status, JSON.stringify(joined.body)).toBe(200);
    expect(joined.body.organization).toEqual({ id: inviter.id, name: 'Inviter', role: 'admin' });
    expect((await membershipsOf(guarded.id)).sort()).toEqual([home.id, inviter.id].sort());
    // The session it answers is no fresher, and no stronger, than the one it was accepted in.
    const [used, issued] = await Promise.all([
      server.base.db.session.findFirstOrThrow({ where: { tokenHash: sha256(signedIn.body.token) } }),
      server.base.db.session.findFirstOrThrow({ where: { tokenHash: sha256(joined.body.token) } }),
    ]);
    expect(issued.authTime).toEqual(used.authTime);
    expect(issued.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
  });
});

describe('accepting for an address whose domain requires SSO (T4)', () => {
  let person: { id: string; email: string };

  beforeAll(async () => {
    // An account on the domain from before its organization required SSO.
    const sso = await createTenant(server.url, platform, 'Requires SSO');
    const email = newEmail('employee', SSO_DOMAIN);
    const invited = await sso.owner.api.post(`/v1/organizations/${sso.id}/invitations`, { email, role: 'member' });
    const made = await accept({ token: invited.body.token, name: 'Employee', password: PASSWORD });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    person = { id: made.body.user.id, email };
    await proveDomain(sso.owner.api, dns, SSO_DOMAIN);
    const connection = await sso.owner.api.post('/api/v1/connections', {
      type: 'saml',
      name: 'Their IdP',
      entry_point: 'https://idp.sso-only.test/sso',
      idp_cert: ca.cert,
      domains: [SSO_DOMAIN],
      require_sso: true,
    });
    expect(connection.status, JSON.stringify(connection.body)).toBe(201);
  });

  it('refuses the password with 403 sso_required, as login does, and joins nothing', async () => {
    const created = await invite(person.email);

    const reply = await accept({ token: created.body.token, password: PASSWORD });

    expect(reply.status, JSON.stringify(reply.body)).toBe(403);
    expect(reply.body.error).toBe('sso_required');
    expect(reply.headers.get('set-cookie')).toBeNull();
    expect(await membershipsOf(person.id)).not.toContain(inviter.id);
    expect(await statusOf(created.body.id)).toBe('pending');
  });

  it('makes no password account for a new address of that domain', async () => {
    const email = newEmail('newcomer', SSO_DOMAIN);
    const created = await invite(email);

    const reply = await accept({ token: created.body.token, name: 'Newcomer', password: PASSWORD });

    expect(reply.status, JSON.stringify(reply.body)).toBe(403);
    expect(reply.body.error).toBe('sso_required');
    expect(await server.base.db.user.count({ where: { email } })).toBe(0);
  });
});

describe('which link proves the address (T5)', () => {
  it('the create answer shows a link of its own, not the one mailed', async () => {
    const email = newEmail('two-links');
    const created = await invite(email);

    expect(created.status).toBe(201);
    const mailed = await mailedToken(email);
    expect(created.body.token).toMatch(/^tsi_/);
    expect(created.body.token).not.toBe(mailed);
    expect(new URL(created.body.accept_url).searchParams.get('token')).toBe(created.body.token);
  });

  it("accepting with the create answer's token gives an account whose address is not verified, in REST and in the ID token", async () => {
    // The inviter accepts its own invitation for an address nobody proved.
    const email = newEmail('ceo');
    const created = await invite(email);

    const reply = await accept({ token: created.body.token, name: 'Not the CEO', password: PASSWORD });

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const me = await client(server.url, { token: reply.body.token }).get('/api/v1/users/me');
    expect(me.body).toMatchObject({ email, email_verified: false });
    expect((await idTokenOf(reply.body.token)).email_verified).toBe(false);
    const userCreated = await server.base.db.event.findMany({
      where: { kind: 'user.created', body: { contains: reply.body.user.id } },
    });
    expect(userCreated.map((e) => JSON.parse(e.body).data.user.emailVerified)).toEqual([false]);
    // The address is asked to prove itself, as any other new address is.
    expect(await server.base.db.mail.count({ where: { toAddress: email, kind: 'email_verification' } })).toBe(1);
  });

  it('the mailed link gives a verified account, in REST and in the ID token', async () => {
    const email = newEmail('mailed');
    await invite(email);

    const reply = await accept({ token: await mailedToken(email), name: 'From The Mail', password: PASSWORD });

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const me = await client(server.url, { token: reply.body.token }).get('/api/v1/users/me');
    expect(me.body).toMatchObject({ email, email_verified: true });
    expect((await idTokenOf(reply.body.token)).email_verified).toBe(true);
    expect(await server.base.db.mail.count({ where: { toAddress: email, kind: 'email_verification' } })).toBe(0);
  });

  it("the mailed link, accepted in the account's own session, proves an unverified address", async () => {
    const email = newEmail('later');
    const first = await home.owner.api.post(`/v1/organizations/${home.id}/invitations`, { email, role: 'member' });
    const made = await accept({ token: first.body.token, name: 'Later', password: PASSWORD });
    const session = client(server.url, { token: made.body.token });
    expect((await session.get('/api/v1/users/me')).body.email_verified).toBe(false);

    await invite(email);
    const joined = await accept({ token: await mailedToken(email) }, session);

    expect(joined.status, JSON.stringify(joined.body)).toBe(200);
    expect((await session.get('/api/v1/users/me')).body.email_verified).toBe(true);
    expect(
      await server.base.db.event.count({
        where: { kind: 'user.email.verified', body: { contains: made.body.user.id } },
      }),
    ).toBe(1);
  });

  it('the link copied from a resend verifies nothing either', async () => {
    const email = newEmail('resent');
    const created = await invite(email);
    const resent = await inviter.owner.api.post(
      `/v1/organizations/${inviter.id}/invitations/${created.body.id}/resend`,
    );
    expect(resent.status).toBe(200);
    expect(resent.body.token).not.toBe(await mailedToken(email));
    // The first copy link was replaced with the mailed one.
    expect((await accept({ token: created.body.token, name: 'Old Copy', password: PASSWORD })).status).toBe(400);

    const reply = await accept({ token: resent.body.token, name: 'Copied', password: PASSWORD });

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect((await client(server.url, { token: reply.body.token }).get('/api/v1/users/me')).body.email_verified).toBe(
      false,
    );
  });
});

describe('joining an organization that requires a second factor', () => {
  it('tells a member without one to set one up first, whether the account is new or signs in with its password', async () => {
    const strict = await createTenant(server.url, platform, 'Strict');
    await enrolTotp(strict.owner.api, clock);
    expect((await strict.owner.api.patch(`/v1/organizations/${strict.id}`, { require_mfa: true })).status).toBe(200);
    const inviteTo = (email: string) =>
      strict.owner.api.post(`/v1/organizations/${strict.id}/invitations`, { email, role: 'member' });
    const email = newEmail('strict');
    await inviteTo(email);
    const existing = await addPerson(server.url, home.owner.api, home.id, 'member', 'plain');
    const toExisting = await inviteTo(existing.email);

    const made = await accept({ token: await mailedToken(email), name: 'Strict', password: PASSWORD });
    const signedIn = await accept({ token: toExisting.body.token, password: PASSWORD });

    for (const reply of [made, signedIn]) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body).toMatchObject({ organization: { id: strict.id }, mfa_enrollment_required: true });
      const session = client(server.url, { token: reply.body.token });
      expect((await session.get('/api/v1/auth/session')).body.organization.id).toBe(strict.id);
    }
  });
});
