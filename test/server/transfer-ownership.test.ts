// POST /v1/organizations/{id}/transfer-ownership (the transferOwnership mutation): an owner makes another member
// owner and steps down to admin in one change; the organization never lacks an owner.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let platform: Client;
let other: Tenant;

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  other = await createTenant(server.url, platform, 'Other tenant');
});
afterAll(() => server?.stop());

const transfer = (as: Client, organizationId: string, body: Record<string, unknown>) =>
  as.post(`/v1/organizations/${organizationId}/transfer-ownership`, body);
const rolesOf = async (organizationId: string) =>
  Object.fromEntries(
    (await server.base.db.membership.findMany({ where: { organizationId } })).map((m) => [m.userId, m.role]),
  );
const ownersOf = async (organizationId: string) =>
  server.base.db.membership.count({ where: { organizationId, role: 'owner' } });
const eventsOf = (organizationId: string, kind: string) =>
  server.base.db.event.findMany({ where: { organizationId, kind }, orderBy: { id: 'asc' } });
const auditOf = (organizationId: string, action: string) =>
  server.base.db.auditLog.findMany({ where: { organizationId, action }, orderBy: { id: 'asc' } });

describe('POST /v1/organizations/{id}/transfer-ownership', () => {
  it('makes the member owner and the calling owner admin, with the role events and audit entries', async () => {
    // given a tenant with one owner
    const t = await createTenant(server.url, platform);

    // when the owner hands the organization to its admin
    const reply = await transfer(t.owner.api, t.id, { user_id: t.admin.id });

    // then the admin is owner, the old owner admin
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({
      user_id: t.admin.id,
      organization_id: t.id,
      role: 'owner',
      user: { email: t.admin.email },
    });
    expect(await rolesOf(t.id)).toEqual({ [t.owner.id]: 'admin', [t.admin.id]: 'owner', [t.member.id]: 'member' });
    // and the events say so, the new owner first
    const changed = (await eventsOf(t.id, 'member.role.changed')).map((e) => JSON.parse(e.body).data);
    expect(changed.map((d) => [d.memberId, d.previousRole, d.role])).toEqual([
      [t.admin.id, 'admin', 'owner'],
      [t.owner.id, 'owner', 'admin'],
    ]);
    expect(
      (await eventsOf(t.id, 'organization.member.role_changed')).map((e) => JSON.parse(e.body).data.member_id),
    ).toEqual([t.admin.id, t.owner.id]);
    // and the audit trail has both role changes and the transfer, by the old owner
    const roleChanges = await auditOf(t.id, 'member.role.change');
    expect(roleChanges.map((a) => [a.actorId, a.targetId, a.details])).toEqual([
      [t.owner.id, t.admin.id, { from: 'admin', to: 'owner' }],
      [t.owner.id, t.owner.id, { from: 'owner', to: 'admin' }],
    ]);
    expect(await auditOf(t.id, 'member.ownership.transfer')).toEqual([
      expect.objectContaining({
        actorId: t.owner.id,
        targetType: 'user',
        targetId: t.admin.id,
        details: { from: t.owner.id, previousRole: 'admin', steppedDown: true },
      }),
    ]);
    // and the new owner can act as one: the old owner is an admin, whom an admin may not make owner again
    expect((await t.owner.api.patch(`/v1/organizations/${t.id}/members/${t.owner.id}`, { role: 'owner' })).status).toBe(
      403,
    );
  });

  it('keeps the caller owner with step_down: false', async () => {
    const t = await createTenant(server.url, platform);

    const reply = await transfer(t.owner.api, t.id, { user_id: t.member.id, step_down: false });

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(await rolesOf(t.id)).toEqual({ [t.owner.id]: 'owner', [t.admin.id]: 'admin', [t.member.id]: 'owner' });
    expect((await eventsOf(t.id, 'member.role.changed')).map((e) => JSON.parse(e.body).data.memberId)).toEqual([
      t.member.id,
    ]);
  });

  it('answers 403 to an admin and to a member, and changes nothing', async () => {
    const t = await createTenant(server.url, platform);

    const byAdmin = await transfer(t.admin.api, t.id, { user_id: t.member.id });
    const byMember = await transfer(t.member.api, t.id, { user_id: t.member.id });

    expect(byAdmin.status).toBe(403);
    expect(byAdmin.body).toEqual({ error: 'forbidden', error_description: 'Only an owner can change an owner' });
    expect(byMember.status).toBe(403);
    expect(await rolesOf(t.id)).toEqual({ [t.owner.id]: 'owner', [t.admin.id]: 'admin', [t.member.id]: 'member' });
    expect(await auditOf(t.id, 'member.ownership.transfer')).toEqual([]);
  });

  it('answers 404 for a user who is not a member, and for an organization the caller is not in', async () => {
    const t = await createTenant(server.url, platform);

    const outsider = await transfer(t.owner.api, t.id, { user_id: other.member.id });
    const unknownUser = await transfer(t.owner.api, t.id, { user_id: UNKNOWN_ID });
    const otherTenant = await transfer(other.owner.api, t.id, { user_id: t.admin.id });
    const unknownOrganization = await transfer(t.owner.api, UNKNOWN_ID, { user_id: t.admin.id });

    expect(outsider.status).toBe(404);
    expect(outsider.body).toEqual({ error: 'not_found', error_description: 'Member not found' });
    expect(unknownUser.body).toEqual(outsider.body);
    expect(otherTenant.status).toBe(404);
    expect(otherTenant.body).toEqual({ error: 'not_found', error_description: 'Organization not found' });
    expect(unknownOrganization.body).toEqual(otherTenant.body);
    expect(await rolesOf(t.id)).toEqual({ [t.owner.id]: 'owner', [t.admin.id]: 'admin', [t.member.id]: 'member' });
  });

  it('answers 400 for the caller itself, a missing user_id and unknown fields, and 401 without credentials', async () => {
    const t = await createTenant(server.url, platform);

    const self = await transfer(t.owner.api, t.id, { user_id: t.owner.id });
    expect(self.status).toBe(400);
    expect(self.body.details).toEqual([{ path: 'user_id', message: 'must be another member' }]);
    expect((await transfer(t.owner.api, t.id, {})).status).toBe(400);
    expect((await transfer(t.owner.api, t.id, { user_id: t.admin.id, keep: true })).status).toBe(400);
    expect((await transfer(t.owner.api, t.id, { user_id: t.admin.id, step_down: 'yes' })).status).toBe(400);
    expect((await transfer(client(server.url), t.id, { user_id: t.admin.id })).status).toBe(401);
    expect(await ownersOf(t.id)).toBe(1);
  });

  it('lets a platform admin who is not a member make someone owner, with nobody stepping down', async () => {
    const t = await createTenant(server.url, platform);

    const reply = await transfer(platform, t.id, { user_id: t.member.id });

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(await rolesOf(t.id)).toEqual({ [t.owner.id]: 'owner', [t.admin.id]: 'admin', [t.member.id]: 'owner' });
    expect((await auditOf(t.id, 'member.ownership.transfer'))[0]!.details).toMatchObject({ steppedDown: false });
  });

  it('takes turns: transfers at once never leave the organization without an owner', async () => {
    // given a sole owner who hands the organization to two people at once
    const t = await createTenant(server.url, platform);
    const people = await Promise.all(
      [1, 2, 3].map((i) => addPerson(server.url, t.owner.api, t.id, 'member', `heir${i}`)),
    );

    const replies = await Promise.all([t.admin, ...people].map((p) => transfer(t.owner.api, t.id, { user_id: p.id })));

    // then exactly one transfer won; the others found the caller an admin already
    expect(replies.map((r) => r.status).sort()).toEqual([200, 403, 403, 403]);
    expect(await ownersOf(t.id)).toBe(1);
    expect((await rolesOf(t.id))[t.owner.id]).toBe('admin');

    // given two owners, each handing the organization to someone, and to each other, at once
    const u = await createTenant(server.url, platform);
    const second = await addPerson(server.url, u.owner.api, u.id, 'owner', 'second');
    const crossed = await Promise.all([
      transfer(u.owner.api, u.id, { user_id: second.id }),
      transfer(second.api, u.id, { user_id: u.owner.id }),
      transfer(u.owner.api, u.id, { user_id: u.member.id }),
      transfer(second.api, u.id, { user_id: u.admin.id }),
    ]);

    // then whatever the order, at least one owner remains, and every answer is a success or a refusal
    for (const r of crossed) expect([200, 403]).toContain(r.status);
    expect(await ownersOf(u.id)).toBeGreaterThanOrEqual(1);
  });
});

describe('transferOwnership over GraphQL', () => {
  it('answers the new owner’s membership, and the refusal of a transfer to oneself as a UserError', async () => {
    const t = await createTenant(server.url, platform);
    const mutation = `mutation($org: String!, $user: String!) { transferOwnership(organizationId: $org, userId: $user) {
      __typename ... on Membership { userId role } ... on UserError { code message } } }`;

    const self = await t.owner.api.post('/graphql', { query: mutation, variables: { org: t.id, user: t.owner.id } });
    const done = await t.owner.api.post('/graphql', { query: mutation, variables: { org: t.id, user: t.admin.id } });

    expect(self.body.data.transferOwnership).toEqual({
      __typename: 'UserError',
      code: 'invalid_request',
      message: 'Choose another member to make owner',
    });
    expect(done.body.data.transferOwnership).toEqual({ __typename: 'Membership', userId: t.admin.id, role: 'owner' });
  });
});
