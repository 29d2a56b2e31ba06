// What provisioning does to people, seats and access (docs/architecture.md#directory-provisioning), over real HTTP,
// for Acme, which verified acme.test and so manages its people (docs/architecture.md#managed-accounts): a directory
// user becomes a verified member; an existing account of its domain joins rather than being duplicated, one outside
// it is refused; deactivating ends the membership at once (refresh tokens, API keys, seats, and the managed person's
// sessions everywhere) and activating again gives none of it back; seat groups never give more seats than bought,
// also under 50 concurrent PATCHes, and the refusal reaches the directory and the audit log; role groups give roles;
// licences follow at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { authorize, codeFrom, exchangeCode, registerClient, tokenRequest } from '../helpers/oauth.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { proveDomain } from '../helpers/sso.ts';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const REDIRECT = 'https://app.acme.test/cb';

let server: TestServer;
let dns: TestDnsServer;
let platform: Client;
let acme: Tenant;
let other: Tenant;
let scim: Client;
let otherScim: Client;
let subscriptionId: string;
let productSlug: string;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ env: { DNS_SERVERS: dns.address } });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme');
  other = await createTenant(server.url, platform, 'Other');
  await proveDomain(acme.owner.api, dns, 'acme.test');
  const token = await acme.owner.api.post('/api/v1/scim-tokens', { name: 'Entra ID' });
  scim = client(server.url, { token: token.body.token });
  otherScim = client(server.url, {
    token: (await other.owner.api.post('/api/v1/scim-tokens', { name: 'Okta' })).body.token,
  });
  productSlug = 'insights-scim';
  const product = await platform.post('/v1/products', { name: 'Insights', slug: productSlug, features: ['reports'] });
  const subscription = await platform.post('/api/v1/subscriptions', {
    organization_id: acme.id,
    product_id: product.body.id,
    total_seats: 10,
    price_per_seat: 5,
    billing_cycle: 'monthly',
    status: 'active',
  });
  subscriptionId = subscription.body.id;
  expect(
    (
      await acme.owner.api.post('/api/v1/directory/group-mappings', {
        group: 'Insights users',
        subscription_id: subscriptionId,
      })
    ).status,
  ).toBe(201);
  expect(
    (await acme.owner.api.post('/api/v1/directory/group-mappings', { group: 'Acme Admins', role: 'admin' })).status,
  ).toBe(201);
});
afterAll(async () => {
  await server?.stop();
  await dns?.stop();
});

const SCIM_JSON = { 'content-type': 'application/scim+json' };
const newUser = (userName: string, extra: Record<string, unknown> = {}) =>
  scim.post(
    '/scim/v2/Users',
    {
      schemas: [USER],
      userName,
      name: { givenName: 'Jane', familyName: 'Doe' },
      emails: [{ value: userName, type: 'work', primary: true }],
      active: true,
      ...extra,
    },
    SCIM_JSON,
  );
const patchUser = (id: string, Operations: unknown[], as = scim) =>
  as.patch(`/scim/v2/Users/${id}`, { schemas: [PATCH], Operations }, SCIM_JSON);
const patchGroup = (id: string, Operations: unknown[]) =>
  scim.patch(`/scim/v2/Groups/${id}`, { schemas: [PATCH], Operations }, SCIM_JSON);
const memberOf = (userId: string) =>
  server.base.db.membership.findUnique({
    where: { userId_organizationId: { userId, organizationId: acme.id } },
    select: { role: true },
  });
const seatsOf = async () =>
  (await acme.owner.api.get(`/api/v1/subscriptions/${subscriptionId}/seats?limit=100`)).body.seats as {
    user_id?: string;
    user?: { id: string };
  }[];
/** A password for a directory user, as a reset would set one, so that the test can sign in as them. */
async function withPassword(userId: string) {
  const { hashPassword } = await import('../../schema/lib/crypto.ts');
  await server.base.db.user.update({ where: { id: userId }, data: { passwordHash: await hashPassword(PASSWORD) } });
}
const seatedIds = async () => (await seatsOf()).map((s) => s.user_id ?? s.user?.id);

describe('users', () => {
  it('become verified members with the role member, with the events and audit entry of an invitation', async () => {
    const created = await newUser('jane@acme.test');
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const user = await server.base.db.user.findUniqueOrThrow({ where: { email: 'jane@acme.test' } });
    expect(user).toMatchObject({ emailVerified: true, name: 'Jane Doe' });
    expect(await memberOf(user.id)).toMatchObject({ role: 'member' });
    const kinds = (
      await server.base.db.event.findMany({ where: { organizationId: acme.id }, orderBy: { id: 'asc' } })
    ).map((e) => e.kind);
    expect(kinds).toEqual(expect.arrayContaining(['user.created', 'member.added', 'organization.member.added']));
    expect(
      await server.base.db.auditLog.count({
        where: { organizationId: acme.id, action: 'member.add', targetId: user.id },
      }),
    ).toBe(1);
  });

  it('that already have an account of its domain join with it, and are not duplicated; one outside it is refused', async () => {
    // An account of acme.test made by another organization's invitation: Acme manages it.
    const elsewhere = await addPerson(server.url, other.owner.api, other.id, 'member', 'shared', 'acme.test');
    const created = await newUser(elsewhere.email);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(await server.base.db.user.count({ where: { email: elsewhere.email } })).toBe(1);
    expect(await memberOf(elsewhere.id)).toMatchObject({ role: 'member' });
    // Its directory moves the address within its domains only: an address elsewhere is not Acme's to vouch for.
    const changed = await patchUser(created.body.id, [
      { op: 'replace', path: 'emails[type eq "work"].value', value: 'taken-over@evil.test' },
    ]);
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: elsewhere.id } })).email).toBe(elsewhere.email);
    // And another organization's token does not see them at all.
    expect((await otherScim.get(`/scim/v2/Users/${created.body.id}`)).status).toBe(404);
    expect(
      (await patchUser(created.body.id, [{ op: 'replace', path: 'active', value: false }], otherScim)).status,
    ).toBe(404);
    // An account outside acme.test is not Acme's to link: its address is taken.
    const outsider = await addPerson(server.url, other.owner.api, other.id, 'member', 'outsider');
    const refused = await newUser(outsider.email);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body).toMatchObject({ status: '409', scimType: 'uniqueness' });
    expect(await memberOf(outsider.id)).toBeNull();
  });

  it('deactivated lose the membership and everything issued for it at once; activated again, they get none of it back', async () => {
    const created = await newUser('leaver@acme.test');
    const id = created.body.id;
    const userId = (await server.base.db.user.findUniqueOrThrow({ where: { email: 'leaver@acme.test' } })).id;
    // The person has a password (set here as a reset would), is an admin, signs in, and holds a seat, an API key
    // and a refresh token of one of Acme's applications.
    await withPassword(userId);
    expect(
      (await acme.owner.api.patch(`/v1/organizations/${acme.id}/members/${userId}`, { role: 'admin' })).status,
    ).toBe(200);
    const login = await client(server.url).post('/api/v1/auth/login', {
      email: 'leaver@acme.test',
      password: PASSWORD,
    });
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    const session = client(server.url, { token: login.body.token });
    expect(
      (await acme.owner.api.post(`/api/v1/subscriptions/${subscriptionId}/seats`, { user_id: userId })).status,
    ).toBe(201);
    const key = await session.post('/api/v1/api-keys', { name: 'Leaver key', organization_id: acme.id });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    const app = await registerClient(acme.owner.api, {
      name: 'Acme app',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid', 'offline_access'],
      consent_required: false,
      grant_types: ['authorization_code', 'refresh_token'],
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
    expect(tokens.refresh_token).toBeTruthy();
    const keyed = client(server.url, { apiKey: { key: key.body.key, secret: key.body.secret } });
    expect((await keyed.get(`/v1/organizations/${acme.id}`)).status).toBe(200);

    const off = await patchUser(id, [{ op: 'Replace', path: 'active', value: 'False' }]);
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(off.body.active).toBe(false);
    expect(await memberOf(userId)).toBeNull();
    expect(await seatedIds()).not.toContain(userId);
    expect((await keyed.get(`/v1/organizations/${acme.id}`)).status).toBeGreaterThanOrEqual(401);
    const refreshed = await tokenRequest(server.url, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: app.client_id,
      client_secret: app.client_secret,
    });
    expect(refreshed.status).toBe(400);
    // Acme manages the account: its sessions end everywhere, not only in Acme.
    expect((await session.get('/api/v1/auth/session')).status).toBe(401);
    const removed = await server.base.db.event.findMany({ where: { organizationId: acme.id, kind: 'member.removed' } });
    expect(removed.some((e) => e.body.includes(userId))).toBe(true);

    const on = await patchUser(id, [{ op: 'replace', value: { active: true } }]);
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    expect(await memberOf(userId)).toMatchObject({ role: 'member' });
    expect(
      (
        await tokenRequest(server.url, {
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token,
          client_id: app.client_id,
          client_secret: app.client_secret,
        })
      ).status,
    ).toBe(400);
    expect((await keyed.get(`/v1/organizations/${acme.id}`)).status).toBeGreaterThanOrEqual(401);

    expect((await scim.delete(`/scim/v2/Users/${id}`)).status).toBe(204);
    expect(await memberOf(userId)).toBeNull();
    expect((await scim.get(`/scim/v2/Users/${id}`)).status).toBe(404);
  });

  it('refuse a userName or externalId already in the directory, as uniqueness', async () => {
    const first = await newUser('unique@acme.test', { externalId: 'ext-unique' });
    expect(first.status).toBe(201);
    for (const again of [
      await newUser('UNIQUE@acme.test'),
      await newUser('else@acme.test', { externalId: 'ext-unique' }),
    ]) {
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ status: '409', scimType: 'uniqueness' });
    }
    // A _ in a name is a character, not a pattern.
    expect((await newUser('a_b@acme.test')).status).toBe(201);
    expect((await newUser('axb@acme.test')).status).toBe(201);
  });
});

describe('groups', () => {
  it('give seats, never more than bought, also to 50 concurrent PATCHes, and the refusal reaches the directory and the audit log', async () => {
    const group = await scim.post(
      '/scim/v2/Groups',
      { schemas: [GROUP], displayName: 'Insights users', members: [] },
      SCIM_JSON,
    );
    expect(group.status, JSON.stringify(group.body)).toBe(201);
    const people = await Promise.all(Array.from({ length: 50 }, (_, i) => newUser(`seat-${i}@acme.test`)));
    expect(people.every((p) => p.status === 201)).toBe(true);
    const before = (await seatedIds()).length;
    const answers = await Promise.all(
      people.map((p) => patchGroup(group.body.id, [{ op: 'Add', path: 'members', value: [{ value: p.body.id }] }])),
    );
    const seated = answers.filter((a) => a.status === 200 || a.status === 204).length;
    expect(seated).toBe(10 - before);
    const refused = answers.filter((a) => a.status === 409);
    expect(refused).toHaveLength(50 - seated);
    expect(refused[0]!.body).toMatchObject({ status: '409' });
    expect(await seatedIds()).toHaveLength(10);
    expect(
      await server.base.db.auditLog.count({
        where: { organizationId: acme.id, action: 'subscription.seat.assign', outcome: 'failure' },
      }),
    ).toBeGreaterThanOrEqual(refused.length);

    // Leaving the group frees the seat, and the licence check follows at once.
    const members = (await scim.get(`/scim/v2/Groups/${group.body.id}`)).body.members as { value: string }[];
    const leaving = members[0]!.value;
    const leavingUser = (await scim.get(`/scim/v2/Users/${leaving}`)).body;
    const userId = (await server.base.db.user.findUniqueOrThrow({ where: { email: leavingUser.userName } })).id;
    await withPassword(userId);
    const own = client(server.url, {
      token: (await client(server.url).post('/api/v1/auth/login', { email: leavingUser.userName, password: PASSWORD }))
        .body.token,
    });
    const licensed = async () => (await own.get(`/api/v1/licenses/check?product=${productSlug}`)).body.allowed;
    expect(await licensed()).toBe(true);
    const removed = await patchGroup(group.body.id, [{ op: 'remove', path: `members[value eq "${leaving}"]` }]);
    expect([200, 204]).toContain(removed.status);
    expect(await seatedIds()).toHaveLength(9);
    expect(await seatedIds()).not.toContain(userId);
    expect(await licensed()).toBe(false);
  });

  it("give roles: the highest mapped role of a member's groups, member once they leave", async () => {
    const person = await newUser('rising@acme.test');
    const userId = (await server.base.db.user.findUniqueOrThrow({ where: { email: 'rising@acme.test' } })).id;
    const admins = await scim.post(
      '/scim/v2/Groups',
      { schemas: [GROUP], displayName: 'acme admins', members: [{ value: person.body.id }] },
      SCIM_JSON,
    );
    expect(admins.status, JSON.stringify(admins.body)).toBe(201);
    expect(await memberOf(userId)).toMatchObject({ role: 'admin' });
    expect([200, 204]).toContain(
      (await patchGroup(admins.body.id, [{ op: 'remove', path: 'members', value: [{ value: person.body.id }] }]))
        .status,
    );
    expect(await memberOf(userId)).toMatchObject({ role: 'member' });
  });
});
