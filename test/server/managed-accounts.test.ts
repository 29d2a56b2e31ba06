// Who may act on an account (docs/architecture.md#managed-accounts), over real HTTP with a real DNS check: an
// organization acts beyond its own membership only on the accounts it manages, those whose address is in a domain it
// has verified. Anyone can create an organization and a directory token, so the attacks of issue 38 (T1, T2, T10 and
// the audit leak) are each reproduced here by an organization that does not manage its victim, next to the managing
// organization that still may.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client, type Reply } from '../helpers/http.ts';
import {
  addPerson,
  createTenant,
  mailedInvitationToken,
  PASSWORD,
  type Person,
  type Tenant,
} from '../helpers/fixtures.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { proveDomain } from '../helpers/sso.ts';
import { movableClock, MINUTE } from '../helpers/clock.ts';
import { enrolTotp } from '../helpers/totp.ts';
import { authorize, codeFrom, exchangeCode, registerClient, tokenRequest } from '../helpers/oauth.ts';
import { hashPassword } from '../../schema/lib/crypto.ts';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const SCIM_JSON = { 'content-type': 'application/scim+json' };
const REDIRECT = 'https://app.example.test/cb';

const clock = movableClock();
let dns: TestDnsServer;
let server: TestServer;
let platform: Client;
/** Manages acme.test: it verified the domain. */
let acme: Tenant;
let acmeScim: Client;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ clock, env: { DNS_SERVERS: dns.address } });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme');
  await proveDomain(acme.owner.api, dns, 'acme.test');
  acmeScim = await directoryOf(acme.owner.api, acme.id);
});
afterAll(async () => {
  await server?.stop();
  await dns?.stop();
});
// Every request comes from 127.0.0.1: each test starts after the sign-in throttle's window of those before it.
beforeEach(() => clock.advance(16 * MINUTE));

const tag = () => randomBytes(4).toString('hex');

/** A directory token of the caller's organization, as a client. */
async function directoryOf(owner: Client, organizationId: string): Promise<Client> {
  const made = await owner.post('/api/v1/scim-tokens', { name: `Directory ${tag()}`, organization_id: organizationId });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return client(server.url, { token: made.body.token });
}

/** Anyone signed in makes an organization of their own, and so owns it, and gives it a directory. */
async function attackerOrganization(): Promise<{ id: string; owner: Person; scim: Client }> {
  const host = await createTenant(server.url, platform);
  const owner = host.member;
  const org = await owner.api.post('/v1/organizations', { name: `Attacker ${tag()}` });
  expect(org.status, JSON.stringify(org.body)).toBe(201);
  return { id: org.body.id, owner, scim: await directoryOf(owner.api, org.body.id) };
}

const scimUser = (userName: string, extra: Record<string, unknown> = {}) => ({
  schemas: [USER],
  userName,
  name: { givenName: 'Given', familyName: 'Family' },
  emails: [{ value: userName, type: 'work', primary: true }],
  active: true,
  ...extra,
});
const postUser = (scim: Client, userName: string, extra: Record<string, unknown> = {}) =>
  scim.post('/scim/v2/Users', scimUser(userName, extra), SCIM_JSON);
const putUser = (scim: Client, id: string, userName: string, extra: Record<string, unknown> = {}) =>
  scim.request('PUT', `/scim/v2/Users/${id}`, scimUser(userName, extra), SCIM_JSON);
const patchUser = (scim: Client, id: string, Operations: unknown[]) =>
  scim.patch(`/scim/v2/Users/${id}`, { schemas: [PATCH], Operations }, SCIM_JSON);

const accountOf = (id: string) => server.base.db.user.findUniqueOrThrow({ where: { id } });
const membership = (userId: string, organizationId: string) =>
  server.base.db.membership.findUnique({ where: { userId_organizationId: { userId, organizationId } } });
const hasTotp = async (userId: string) =>
  !!(await server.base.db.totpFactor.findUnique({ where: { userId } }))?.confirmedAt;
const passwordLogin = (email: string) => client(server.url).post('/api/v1/auth/login', { email, password: PASSWORD });

/** The invitee accepts in their own session: they chose to join. */
async function invite(owner: Client, organizationId: string, person: Person) {
  const invitation = await owner.post(`/v1/organizations/${organizationId}/invitations`, { email: person.email });
  expect(invitation.status, JSON.stringify(invitation.body)).toBe(201);
  const accepted = await person.api.post('/api/v1/invitations/accept', { token: invitation.body.token });
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
}

function expectUniqueness(reply: Reply) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(409);
  expect(reply.body).toMatchObject({
    schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
    status: '409',
    scimType: 'uniqueness',
  });
}

/** A person of acme.test with a password (set as a reset would), provisioned by Acme's directory. */
async function acmePerson(label = 'person') {
  const email = `${label}-${tag()}@acme.test`;
  const created = await postUser(acmeScim, email);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const user = await server.base.db.user.findUniqueOrThrow({ where: { email } });
  await server.base.db.user.update({ where: { id: user.id }, data: { passwordHash: await hashPassword(PASSWORD) } });
  return { scimId: created.body.id as string, userId: user.id, email };
}

describe('T1: a directory links only the accounts its organization manages', () => {
  it("refuses another organization's person 409 uniqueness, links nothing and makes no membership", async () => {
    // given a victim with an authenticator app in their own organization, and an attacker with an organization of
    // their own and its directory token
    const home = await createTenant(server.url, platform);
    const victim = home.owner;
    await enrolTotp(victim.api, clock);
    const attacker = await attackerOrganization();

    // when the attacker's directory provisions the victim's address
    const reply = await postUser(attacker.scim, victim.email);

    // then it is refused as a taken name, and nothing ties the victim to the attacker's organization
    expectUniqueness(reply);
    expect(await membership(victim.id, attacker.id)).toBeNull();
    expect(await server.base.db.scimUser.count({ where: { organizationId: attacker.id } })).toBe(0);
    expect(
      (await attacker.scim.get(`/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${victim.email}"`)}`)).body
        .totalResults,
    ).toBe(0);
    // and a platform admin is no easier a target
    expectUniqueness(await postUser(attacker.scim, ADMIN.email));
  });

  it("refuses an owner's reset of the factors of a member who joined by invitation (403), and the victim keeps them", async () => {
    // given a victim with an authenticator app who accepted the attacker's invitation
    const home = await createTenant(server.url, platform);
    const victim = home.member;
    await enrolTotp(victim.api, clock);
    const attacker = await attackerOrganization();
    await invite(attacker.owner.api, attacker.id, victim);

    // when the attacker, owner there, resets the member's factors
    const reply = await attacker.owner.api.delete(`/v1/organizations/${attacker.id}/members/${victim.id}/mfa`);

    // then it is refused, and the password alone still makes no session
    expect(reply.status, JSON.stringify(reply.body)).toBe(403);
    expect(reply.body.error).toBe('forbidden');
    expect(await hasTotp(victim.id)).toBe(true);
    const login = await passwordLogin(victim.email);
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    expect(login.body.mfa_required).toBe(true);
    expect(login.body.token).toBeUndefined();
    expect(await server.base.db.auditLog.count({ where: { action: 'member.mfa.reset', targetId: victim.id } })).toBe(0);
  });

  it('protects a person who belongs to several organizations from each of them; a platform admin still helps', async () => {
    // given a person in three organizations, none of which manages example.test
    const first = await createTenant(server.url, platform);
    const person = first.member;
    await enrolTotp(person.api, clock);
    const second = await createTenant(server.url, platform);
    const third = await attackerOrganization();
    await invite(second.owner.api, second.id, person);
    await invite(third.owner.api, third.id, person);

    // then no owner resets their factors, and no directory links them
    for (const [organizationId, owner] of [
      [first.id, first.owner.api],
      [second.id, second.owner.api],
      [third.id, third.owner.api],
    ] as const) {
      expect((await owner.delete(`/v1/organizations/${organizationId}/members/${person.id}/mfa`)).status).toBe(403);
      expectUniqueness(await postUser(await directoryOf(owner, organizationId), person.email));
    }
    expect(await hasTotp(person.id)).toBe(true);
    expect(await server.base.db.scimUser.count({ where: { userId: person.id } })).toBe(0);

    // and a platform admin, asked for help, still can
    expect((await platform.delete(`/v1/organizations/${first.id}/members/${person.id}/mfa`)).status).toBe(204);
    expect(await hasTotp(person.id)).toBe(false);
  });
});

describe("T2: an account in no organization is nobody else's to take", () => {
  it('refuses to link it, and a directory that created an account outside its domains cannot move its address', async () => {
    // given a person who left every organization, and an attacker's directory
    const home = await createTenant(server.url, platform);
    const loner = await addPerson(server.url, home.owner.api, home.id, 'member', 'loner');
    expect((await loner.api.delete(`/v1/organizations/${home.id}/members/${loner.id}`)).status).toBe(204);
    const attacker = await attackerOrganization();

    // when the attacker's directory provisions their address: refused, nothing linked
    expectUniqueness(await postUser(attacker.scim, loner.email));
    expect(await server.base.db.scimUser.count({ where: { userId: loner.id } })).toBe(0);

    // and an address that has no account yet is created, but not as proven: the directory does not vouch for it
    const fresh = `fresh-${tag()}@example.test`;
    const created = await postUser(attacker.scim, fresh);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const account = await server.base.db.user.findUniqueOrThrow({ where: { email: fresh } });
    expect(account.emailVerified).toBe(false);

    // when the directory replaces that person's address and name with the attacker's
    const takeover = `attacker-${tag()}@evil.test`;
    const put = await putUser(attacker.scim, created.body.id, takeover, {
      name: { givenName: 'Evil', familyName: 'Name' },
    });

    // then the directory's record changes, the account does not, and so a reset to the attacker's address reaches no one
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.userName).toBe(takeover);
    expect(await accountOf(account.id)).toMatchObject({ email: fresh, emailVerified: false, name: account.name });
    expect(await server.base.db.user.findUnique({ where: { email: takeover } })).toBeNull();
    expect((await client(server.url).post('/api/v1/auth/password-reset', { email: takeover })).status).toBe(202);
    const patched = await patchUser(attacker.scim, created.body.id, [
      { op: 'replace', path: 'emails[type eq "work"].value', value: takeover },
    ]);
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect((await accountOf(account.id)).email).toBe(fresh);
  });
});

describe('a domain another organization verified', () => {
  it("is not a directory's to provision into, even for an address with no account yet", async () => {
    // given an attacker's directory, and acme.test verified by Acme
    const attacker = await attackerOrganization();
    const address = `ceo-${tag()}@acme.test`;

    // when it provisions an address of acme.test that has no account
    const reply = await postUser(attacker.scim, address);

    // then it is refused, and no account waits for Acme's person with the attacker's organization around it
    expectUniqueness(reply);
    expect(await server.base.db.user.findUnique({ where: { email: address } })).toBeNull();
  });
});

describe('the managing organization', () => {
  it('links an existing account of its domain that belongs elsewhere too, changes its address and name, and resets its factors', async () => {
    // given a person of acme.test who made an account through another organization's invitation and has an app
    const elsewhere = await createTenant(server.url, platform);
    const email = `jo-${tag()}@acme.test`;
    expect((await elsewhere.owner.api.post(`/v1/organizations/${elsewhere.id}/invitations`, { email })).status).toBe(
      201,
    );
    // (from the mailed link: Jo's mailbox proved the address, so linking takes nothing of Jo's away)
    const token = await mailedInvitationToken(server.url, email);
    const accepted = await client(server.url).post('/api/v1/invitations/accept', {
      token,
      name: 'Jo',
      password: PASSWORD,
    });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const userId = accepted.body.user.id as string;
    await enrolTotp(client(server.url, { token: accepted.body.token }), clock);

    // when Acme's directory provisions the address: the account joins Acme
    const created = await postUser(acmeScim, email);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(await membership(userId, acme.id)).toMatchObject({ role: 'member' });
    expect(await server.base.db.user.count({ where: { email } })).toBe(1);

    // and its changes of address (within its domain) and name reach the account
    const moved = `jo.moved-${tag()}@acme.test`;
    const put = await putUser(acmeScim, created.body.id, moved, { name: { givenName: 'Jo', familyName: 'Moved' } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(await accountOf(userId)).toMatchObject({ email: moved, emailVerified: true, name: 'Jo Moved' });

    // the other organization cannot reset the factors, Acme's owner can
    expect((await elsewhere.owner.api.delete(`/v1/organizations/${elsewhere.id}/members/${userId}/mfa`)).status).toBe(
      403,
    );
    expect(await hasTotp(userId)).toBe(true);
    expect((await acme.owner.api.delete(`/v1/organizations/${acme.id}/members/${userId}/mfa`)).status).toBe(204);
    expect(await hasTotp(userId)).toBe(false);
  });

  it('takes over an account of its domain whose address nobody proved only after removing every credential it held', async () => {
    // given an account made for ceo@later.test before anyone proved the domain, by someone who holds its password,
    // an authenticator app and a session (account pre-hijacking, Sudhodanan and Paverd 2022)
    const squatter = await attackerOrganization();
    const email = `ceo-${tag()}@later-${tag()}.test`;
    const invitation = await squatter.owner.api.post(`/v1/organizations/${squatter.id}/invitations`, { email });
    const accepted = await client(server.url).post('/api/v1/invitations/accept', {
      token: invitation.body.token,
      name: 'Squatter',
      password: PASSWORD,
    });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const userId = accepted.body.user.id as string;
    // (the inviter accepted it with the link it was shown, not the mailbox's: nothing proved the address)
    expect((await accountOf(userId)).emailVerified).toBe(false);
    const squatterSession = client(server.url, { token: accepted.body.token });
    await enrolTotp(squatterSession, clock);

    // when the domain's real organization proves it and its directory provisions the address
    const later = await createTenant(server.url, platform);
    await proveDomain(later.owner.api, dns, email.split('@')[1]!);
    const created = await postUser(await directoryOf(later.owner.api, later.id), email);

    // then the person has the account, with none of what the squatter held
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(await membership(userId, later.id)).not.toBeNull();
    expect((await accountOf(userId)).emailVerified).toBe(true);
    expect((await squatterSession.get('/api/v1/auth/session')).status).toBe(401);
    expect((await passwordLogin(email)).status).toBe(401);
    expect(await hasTotp(userId)).toBe(false);
    // and the account's organizations hear of it as of any take-over: its password changed, its address proven
    const about = async (kind: string) =>
      (await server.base.db.event.findMany({ where: { kind } })).filter(
        (e) => JSON.parse(e.body).data.user?.id === userId,
      );
    expect(await about('user.password.changed')).toHaveLength(1);
    expect(await about('user.email.verified')).toHaveLength(1);
  });

  it("tells its owners which members' accounts it manages", async () => {
    const person = await acmePerson('listed');
    const query = `query($o: String!) { members(organizationId: $o, limit: 100) { items { userId managed } } }`;
    const reply = await acme.owner.api.post('/graphql', { query, variables: { o: acme.id } });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const managed = new Map(
      reply.body.data.members.items.map((m: { userId: string; managed: boolean }) => [m.userId, m.managed]),
    );
    expect(managed.get(person.userId)).toBe(true);
    // Acme's founding members were invited at example.test, which nobody verified.
    expect(managed.get(acme.member.id)).toBe(false);
  });

  it('does not move an account out of its domains', async () => {
    const person = await acmePerson('stays');
    const put = await putUser(acmeScim, person.scimId, `stays-${tag()}@elsewhere.test`);
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect((await accountOf(person.userId)).email).toBe(person.email);
  });
});

describe('T10: a directory deactivation of a managed account ends its sessions everywhere', () => {
  for (const how of ['PATCH active false', 'DELETE'] as const) {
    it(`${how} ends the managed person's sessions and tokens; an unmanaged person keeps theirs, out of the organization`, async () => {
      // given a managed person signed in, and an unmanaged person the same way signed in and a member of Acme too
      const managed = await acmePerson('leaver');
      const login = await passwordLogin(managed.email);
      expect(login.status, JSON.stringify(login.body)).toBe(200);
      const session = client(server.url, { token: login.body.token });
      expect((await session.get('/api/v1/auth/session')).status).toBe(200);
      const other = await attackerOrganization();
      // who also belongs to another organization and holds tokens of one of its applications
      await invite(other.owner.api, other.id, {
        id: managed.userId,
        email: managed.email,
        token: login.body.token,
        api: session,
      });
      const app = await registerClient(other.owner.api, {
        name: `App ${tag()}`,
        redirect_uris: [REDIRECT],
        allowed_scopes: ['openid', 'offline_access'],
        consent_required: false,
        grant_types: ['authorization_code', 'refresh_token'],
        organization_id: other.id,
      });
      const code = codeFrom(
        await authorize(server.url, login.body.token, {
          client_id: app.client_id,
          redirect_uri: REDIRECT,
          response_type: 'code',
          scope: 'openid offline_access',
          nonce: 'n',
          state: 's',
        }),
      );
      const tokens = (await exchangeCode(server.url, app, code, REDIRECT)).body;
      expect(tokens.refresh_token, JSON.stringify(tokens)).toBeTruthy();
      const userinfo = () => client(server.url, { token: tokens.access_token }).get('/oauth/userinfo');
      expect((await userinfo()).status).toBe(200);
      const outsider = `outsider-${tag()}@example.test`;
      const provisioned = await postUser(other.scim, outsider);
      expect(provisioned.status, JSON.stringify(provisioned.body)).toBe(201);
      const outsiderId = (await server.base.db.user.findUniqueOrThrow({ where: { email: outsider } })).id;
      await server.base.db.user.update({
        where: { id: outsiderId },
        data: { passwordHash: await hashPassword(PASSWORD) },
      });
      const outsiderLogin = await passwordLogin(outsider);
      expect(outsiderLogin.status, JSON.stringify(outsiderLogin.body)).toBe(200);
      const outsiderSession = client(server.url, { token: outsiderLogin.body.token });

      // when each directory ends its person
      const end = (scim: Client, id: string) =>
        how === 'DELETE'
          ? scim.delete(`/scim/v2/Users/${id}`)
          : patchUser(scim, id, [{ op: 'replace', path: 'active', value: false }]);
      expect((await end(acmeScim, managed.scimId)).status).toBeLessThan(300);
      expect((await end(other.scim, provisioned.body.id)).status).toBeLessThan(300);

      // then the managed person is signed out everywhere, and the other organization's tokens end too
      expect((await session.get('/api/v1/auth/session')).status).toBe(401);
      expect(await membership(managed.userId, acme.id)).toBeNull();
      expect(await membership(managed.userId, other.id)).not.toBeNull();
      expect((await userinfo()).status).toBe(401);
      const refreshed = await tokenRequest(server.url, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: app.client_id,
        client_secret: app.client_secret,
      });
      expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(400);
      // and the unmanaged one only left that organization
      const still = await outsiderSession.get('/api/v1/auth/session');
      expect(still.status, JSON.stringify(still.body)).toBe(200);
      expect(still.body.organization).toBeNull();
      expect(await membership(outsiderId, other.id)).toBeNull();
    });
  }
});

describe("the audit leak of T1: a person's failed sign-ins", () => {
  const wrongPassword = (email: string) =>
    client(server.url).post(
      '/api/v1/auth/login',
      { email, password: 'definitely not it' },
      { 'user-agent': 'leak-test/1.0' },
    );
  const failuresSeenBy = async (as: Client, userId: string, organizationId?: string) => {
    const query = {
      action: 'auth.login',
      outcome: 'failure',
      target_id: userId,
      ...(organizationId ? { organization_id: organizationId } : {}),
    };
    const reply = await as.get(`/api/v1/audit-logs?${new URLSearchParams(query)}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    return reply.body.audit_logs as { organization_id: string | null; ip: string }[];
  };

  it('are seen by the managing organization and the platform admins, not by an organization the person joined', async () => {
    // given a managed person of Acme, who also joined an attacker's organization by invitation
    const person = await acmePerson('watched');
    const login = await passwordLogin(person.email);
    const attacker = await attackerOrganization();
    await invite(attacker.owner.api, attacker.id, {
      id: person.userId,
      email: person.email,
      token: login.body.token,
      api: client(server.url, { token: login.body.token }),
    });

    // when someone guesses their password
    expect((await wrongPassword(person.email)).status).toBe(401);

    // then Acme and the platform admins see it, with the address; the attacker does not
    expect(await failuresSeenBy(acme.owner.api, person.userId, acme.id)).toEqual([
      expect.objectContaining({ organization_id: acme.id, ip: expect.stringMatching(/127\.0\.0\.1/) }),
    ]);
    expect(await failuresSeenBy(platform, person.userId)).toHaveLength(1);
    expect(await failuresSeenBy(attacker.owner.api, person.userId, attacker.id)).toEqual([]);
    expect(
      await server.base.db.auditLog.count({
        where: { organizationId: attacker.id, targetId: person.userId, outcome: 'failure' },
      }),
    ).toBe(0);
  });

  it('of a person nobody manages are a platform event, in none of their organizations', async () => {
    const home = await createTenant(server.url, platform);
    const attacker = await attackerOrganization();
    await invite(attacker.owner.api, attacker.id, home.member);
    expect((await wrongPassword(home.member.email)).status).toBe(401);
    expect(await failuresSeenBy(platform, home.member.id)).toEqual([
      expect.objectContaining({ organization_id: null }),
    ]);
    expect(await failuresSeenBy(attacker.owner.api, home.member.id, attacker.id)).toEqual([]);
    expect(await failuresSeenBy(home.owner.api, home.member.id, home.id)).toEqual([]);
  });
});
