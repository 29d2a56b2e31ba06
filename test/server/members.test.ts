import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, type Person, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let platform: Client;
let a: Tenant;
let b: Tenant;

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  a = await createTenant(server.url, platform, 'Tenant A');
  b = await createTenant(server.url, platform, 'Tenant B');
});
afterAll(() => server?.stop());

const members = (as: Client, organizationId: string) => as.get(`/v1/organizations/${organizationId}/members`);
const roleOf = async (organizationId: string, userId: string) =>
  (await members(platform, organizationId)).body.members.find((m: any) => m.user_id === userId)?.role ?? null;
const eventsOf = (organizationId: string, kind: string) =>
  server.base.db.event.findMany({ where: { organizationId, kind }, orderBy: { id: 'asc' } });
const auditOf = (organizationId: string, action: string) =>
  server.base.db.auditLog.findMany({ where: { organizationId, action } });

describe('GET /v1/organizations/{id}/members', () => {
  it('lists the members with their roles to an owner', async () => {
    const reply = await members(a.owner.api, a.id);

    expect(reply.status).toBe(200);
    // The platform admin who set the tenant up has left: owner, admin and member remain, in joining order.
    expect(reply.body.members.map((m: any) => [m.user_id, m.role])).toEqual([
      [a.owner.id, 'owner'],
      [a.admin.id, 'admin'],
      [a.member.id, 'member'],
    ]);
    expect(reply.body.members[2]).toEqual({
      user_id: a.member.id,
      organization_id: a.id,
      role: 'member',
      joined_at: expect.any(String),
      mfa_enabled: false,
      user: { id: a.member.id, email: a.member.email, name: 'member', email_verified: expect.any(Boolean) },
    });
  });

  it('lists them to an admin and to a platform admin', async () => {
    expect((await members(a.admin.api, a.id)).status).toBe(200);
    const byPlatform = await members(platform, a.id);
    expect(byPlatform.status).toBe(200);
    expect(byPlatform.body.members.map((m: any) => m.user_id)).toContain(a.member.id);
  });

  it('answers 403 to a member of the organization', async () => {
    const reply = await members(a.member.api, a.id);

    expect(reply.status).toBe(403);
    expect(reply.body).toEqual({ error: 'forbidden', error_description: expect.any(String) });
  });

  it("answers 404 to another tenant's owner, as for an unknown organization", async () => {
    const other = await members(b.owner.api, a.id);
    const unknown = await members(b.owner.api, UNKNOWN_ID);

    expect(other.status).toBe(404);
    expect(other.body).toEqual({ error: 'not_found', error_description: 'Organization not found' });
    expect(unknown.body).toEqual(other.body);
  });

  it('answers 404 to a platform admin for an unknown organization, and 401 without credentials', async () => {
    expect((await members(platform, UNKNOWN_ID)).status).toBe(404);
    expect((await members(client(server.url), a.id)).status).toBe(401);
  });
});

describe('PATCH /v1/organizations/{id}/members/{user_id}', () => {
  it('lets an admin promote a member to admin, with events and an audit entry', async () => {
    const person = await addPerson(server.url, a.owner.api, a.id, 'member', 'promoted');

    const reply = await a.admin.api.patch(`/v1/organizations/${a.id}/members/${person.id}`, { role: 'admin' });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      user_id: person.id,
      organization_id: a.id,
      role: 'admin',
      user: { email: person.email },
    });
    expect((await person.api.get('/api/v1/orgs')).body).toEqual([{ id: a.id, name: 'Tenant A', role: 'admin' }]);
    expect((await members(person.api, a.id)).status).toBe(200);
    const user = { id: person.id, email: person.email, name: 'promoted' };
    expect((await eventsOf(a.id, 'member.role.changed')).map((e) => JSON.parse(e.body).data)).toContainEqual({
      organizationId: a.id,
      memberId: person.id,
      user,
      role: 'admin',
      previousRole: 'member',
    });
    expect(
      (await eventsOf(a.id, 'organization.member.role_changed')).map((e) => JSON.parse(e.body).data),
    ).toContainEqual({ organization_id: a.id, member_id: person.id, user, role: 'admin', previous_role: 'member' });
    expect(await auditOf(a.id, 'member.role.change')).toContainEqual(
      expect.objectContaining({
        actorId: a.admin.id,
        targetType: 'user',
        targetId: person.id,
        details: { from: 'member', to: 'admin' },
      }),
    );
  });

  it('lets an admin demote another admin', async () => {
    const person = await addPerson(server.url, a.owner.api, a.id, 'admin', 'demoted');

    const reply = await a.admin.api.patch(`/v1/organizations/${a.id}/members/${person.id}`, { role: 'member' });

    expect(reply.status).toBe(200);
    expect(reply.body.role).toBe('member');
    expect((await members(person.api, a.id)).status).toBe(403);
  });

  it('answers 403 to an admin changing an owner or promoting to owner', async () => {
    const demoteOwner = await a.admin.api.patch(`/v1/organizations/${a.id}/members/${a.owner.id}`, { role: 'member' });
    const promote = await a.admin.api.patch(`/v1/organizations/${a.id}/members/${a.member.id}`, { role: 'owner' });
    const promoteSelf = await a.admin.api.patch(`/v1/organizations/${a.id}/members/${a.admin.id}`, { role: 'owner' });

    expect([demoteOwner.status, promote.status, promoteSelf.status]).toEqual([403, 403, 403]);
    expect(demoteOwner.body.error).toBe('forbidden');
    expect(await roleOf(a.id, a.owner.id)).toBe('owner');
    expect(await roleOf(a.id, a.member.id)).toBe('member');
    expect(await roleOf(a.id, a.admin.id)).toBe('admin');
  });

  it('answers 403 to a member, even for its own role', async () => {
    const self = await a.member.api.patch(`/v1/organizations/${a.id}/members/${a.member.id}`, { role: 'admin' });
    const other = await a.member.api.patch(`/v1/organizations/${a.id}/members/${a.admin.id}`, { role: 'member' });

    expect([self.status, other.status]).toEqual([403, 403]);
    expect(await roleOf(a.id, a.member.id)).toBe('member');
  });

  it('never lets the last owner go: 409, and a second owner makes it possible', async () => {
    const c = await createTenant(server.url, platform, 'Tenant C');

    const lastOwner = await c.owner.api.patch(`/v1/organizations/${c.id}/members/${c.owner.id}`, { role: 'admin' });
    expect(lastOwner.status).toBe(409);
    expect(lastOwner.body.error).toBe('conflict');
    expect(await roleOf(c.id, c.owner.id)).toBe('owner');

    const promoted = await c.owner.api.patch(`/v1/organizations/${c.id}/members/${c.admin.id}`, { role: 'owner' });
    expect(promoted.status).toBe(200);
    const stepDown = await c.owner.api.patch(`/v1/organizations/${c.id}/members/${c.owner.id}`, { role: 'admin' });
    expect(stepDown.status).toBe(200);
    expect(await roleOf(c.id, c.owner.id)).toBe('admin');
    // The new sole owner meets the same rule.
    expect(
      (await c.admin.api.patch(`/v1/organizations/${c.id}/members/${c.admin.id}`, { role: 'member' })).status,
    ).toBe(409);
  });

  it('keeps an owner when two owners step down or leave at the same moment', async () => {
    const c = await createTenant(server.url, platform, 'Tenant Race');
    const path = (userId: string) => `/v1/organizations/${c.id}/members/${userId}`;
    const owners = async () =>
      (await members(platform, c.id)).body.members.filter((m: any) => m.role === 'owner').length;

    for (let round = 0; round < 3; round++) {
      // Two owners; each steps down (or leaves) at once: only one may succeed.
      expect((await platform.patch(path(c.admin.id), { role: 'owner' })).status).toBe(200);
      expect((await platform.patch(path(c.owner.id), { role: 'owner' })).status).toBe(200);
      const leaves = round === 2;
      const [first, second] = await Promise.all([
        c.owner.api.patch(path(c.owner.id), { role: 'admin' }),
        leaves ? c.admin.api.delete(path(c.admin.id)) : c.admin.api.patch(path(c.admin.id), { role: 'admin' }),
      ]);
      const outcomes = [
        first.status === 200 ? 'ok' : first.status,
        second.status === (leaves ? 204 : 200) ? 'ok' : second.status,
      ];
      expect(outcomes.sort()).toEqual([409, 'ok']);
      expect(await owners()).toBe(1);
    }
  });

  it("answers 404 across tenants: another tenant's organization, or a user who is not a member", async () => {
    const fromB = await b.owner.api.patch(`/v1/organizations/${a.id}/members/${a.member.id}`, { role: 'admin' });
    const foreignUser = await a.owner.api.patch(`/v1/organizations/${a.id}/members/${b.member.id}`, { role: 'admin' });
    const foreignOrg = await a.owner.api.patch(`/v1/organizations/${b.id}/members/${b.member.id}`, { role: 'admin' });
    const unknownUser = await a.owner.api.patch(`/v1/organizations/${a.id}/members/${UNKNOWN_ID}`, { role: 'admin' });

    expect([fromB.status, foreignUser.status, foreignOrg.status, unknownUser.status]).toEqual([404, 404, 404, 404]);
    expect(foreignOrg.body).toEqual({ error: 'not_found', error_description: 'Organization not found' });
    expect(await roleOf(a.id, a.member.id)).toBe('member');
    expect(await roleOf(b.id, b.member.id)).toBe('member');
  });

  it('answers 400 for an unknown role, a missing role or an unknown field', async () => {
    const path = `/v1/organizations/${a.id}/members/${a.member.id}`;
    const unknownRole = await a.owner.api.patch(path, { role: 'superuser' });
    const missing = await a.owner.api.patch(path, {});
    const extra = await a.owner.api.patch(path, { role: 'admin', user_id: a.owner.id });

    expect([unknownRole.status, missing.status, extra.status]).toEqual([400, 400, 400]);
    expect(unknownRole.body.error).toBe('invalid_request');
    expect(extra.body.details).toEqual([expect.objectContaining({ path: 'user_id' })]);
    expect(await roleOf(a.id, a.member.id)).toBe('member');
  });

  it("lowers a demoted admin's API keys to its new role (a key never acts above its creator)", async () => {
    const person = await addPerson(server.url, a.owner.api, a.id, 'admin', 'keyholder');
    const created = await person.api.post('/api/v1/api-keys', { name: 'automation', role: 'admin' });
    expect(created.status).toBe(201);
    const viaKey = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    expect((await members(viaKey, a.id)).status).toBe(200);

    expect((await a.owner.api.patch(`/v1/organizations/${a.id}/members/${person.id}`, { role: 'member' })).status).toBe(
      200,
    );

    expect((await members(viaKey, a.id)).status).toBe(403);
    expect(
      (await viaKey.post(`/v1/organizations/${a.id}/invitations`, { email: 'back-door@example.test', role: 'admin' }))
        .status,
    ).toBe(403);
    expect((await viaKey.get(`/v1/organizations/${a.id}`)).status).toBe(200);
    expect(await auditOf(a.id, 'api_key.role.lower')).toContainEqual(
      expect.objectContaining({
        targetId: created.body.id,
        details: { from: 'admin', to: 'member', reason: 'creator_demoted' },
      }),
    );
  });

  it('lets a platform admin change roles in any organization', async () => {
    const person = await addPerson(server.url, b.owner.api, b.id, 'member', 'supported');

    const reply = await platform.patch(`/v1/organizations/${b.id}/members/${person.id}`, { role: 'owner' });

    expect(reply.status).toBe(200);
    expect(await roleOf(b.id, person.id)).toBe('owner');
  });
});

describe('DELETE /v1/organizations/{id}/members/{user_id}', () => {
  let leaver: Person;

  beforeAll(async () => {
    leaver = await addPerson(server.url, a.owner.api, a.id, 'member', 'leaver');
  });

  it('lets a member leave: 204, events, audit, and the organization is gone for it', async () => {
    const reply = await leaver.api.delete(`/v1/organizations/${a.id}/members/${leaver.id}`);

    expect(reply.status).toBe(204);
    expect(await roleOf(a.id, leaver.id)).toBeNull();
    expect((await leaver.api.get(`/v1/organizations/${a.id}`)).status).toBe(404);
    expect((await leaver.api.get('/api/v1/orgs')).body).toEqual([]);
    // The session that acted in the organization falls back to none.
    expect((await leaver.api.get('/api/v1/auth/session')).body.organization).toBeNull();
    const user = { id: leaver.id, email: leaver.email, name: 'leaver' };
    expect((await eventsOf(a.id, 'member.removed')).map((e) => JSON.parse(e.body).data)).toContainEqual({
      organizationId: a.id,
      memberId: leaver.id,
      user,
      role: 'member',
    });
    expect((await eventsOf(a.id, 'organization.member.removed')).map((e) => JSON.parse(e.body).data)).toContainEqual({
      organization_id: a.id,
      member_id: leaver.id,
      user,
      role: 'member',
    });
    expect(await auditOf(a.id, 'member.remove')).toContainEqual(
      expect.objectContaining({ actorId: leaver.id, targetId: leaver.id }),
    );
  });

  it('lets an admin remove a member and another admin', async () => {
    const member = await addPerson(server.url, a.owner.api, a.id, 'member', 'removed');
    const admin = await addPerson(server.url, a.owner.api, a.id, 'admin', 'removed-admin');

    const first = await a.admin.api.delete(`/v1/organizations/${a.id}/members/${member.id}`);
    const second = await a.admin.api.delete(`/v1/organizations/${a.id}/members/${admin.id}`);

    expect([first.status, second.status]).toEqual([204, 204]);
    expect((await member.api.get(`/v1/organizations/${a.id}`)).status).toBe(404);
    expect((await admin.api.get(`/v1/organizations/${a.id}/members`)).status).toBe(404);
    expect(await auditOf(a.id, 'member.remove')).toContainEqual(
      expect.objectContaining({ actorId: a.admin.id, targetId: member.id }),
    );
  });

  it('revokes the API keys a removed admin made there, so that it cannot come back through them', async () => {
    const person = await addPerson(server.url, a.owner.api, a.id, 'admin', 'keyholder');
    const created = await person.api.post('/api/v1/api-keys', { name: 'automation', role: 'admin' });
    const viaKey = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    expect((await members(viaKey, a.id)).status).toBe(200);

    expect((await a.owner.api.delete(`/v1/organizations/${a.id}/members/${person.id}`)).status).toBe(204);

    expect((await members(viaKey, a.id)).status).toBe(401);
    expect(
      (await viaKey.post(`/v1/organizations/${a.id}/invitations`, { email: 'back-door@example.test', role: 'admin' }))
        .status,
    ).toBe(401);
    expect((await eventsOf(a.id, 'api_key.revoked')).map((e) => JSON.parse(e.body).data)).toContainEqual({
      apiKey: { id: created.body.id, name: 'automation' },
    });
    expect(await auditOf(a.id, 'api_key.revoke')).toContainEqual(
      expect.objectContaining({ targetId: created.body.id, details: { reason: 'creator_left' } }),
    );
  });

  it('answers 403 to an admin removing an owner and to a member removing someone else', async () => {
    const owner = await a.admin.api.delete(`/v1/organizations/${a.id}/members/${a.owner.id}`);
    const byMember = await a.member.api.delete(`/v1/organizations/${a.id}/members/${a.admin.id}`);

    expect([owner.status, byMember.status]).toEqual([403, 403]);
    expect(await roleOf(a.id, a.owner.id)).toBe('owner');
    expect(await roleOf(a.id, a.admin.id)).toBe('admin');
  });

  it('answers 409 when the last owner would leave or be removed', async () => {
    const leaving = await a.owner.api.delete(`/v1/organizations/${a.id}/members/${a.owner.id}`);
    const removed = await platform.delete(`/v1/organizations/${a.id}/members/${a.owner.id}`);

    expect([leaving.status, removed.status]).toEqual([409, 409]);
    expect(leaving.body.error).toBe('conflict');
    expect(await roleOf(a.id, a.owner.id)).toBe('owner');
  });

  it('answers 404 across tenants and for someone who is not a member', async () => {
    const fromB = await b.owner.api.delete(`/v1/organizations/${a.id}/members/${a.member.id}`);
    const foreignUser = await a.owner.api.delete(`/v1/organizations/${a.id}/members/${b.member.id}`);
    const foreignOrg = await a.owner.api.delete(`/v1/organizations/${b.id}/members/${b.member.id}`);
    const formerMember = await a.owner.api.delete(`/v1/organizations/${a.id}/members/${leaver.id}`);

    expect([fromB.status, foreignUser.status, foreignOrg.status, formerMember.status]).toEqual([404, 404, 404, 404]);
    expect(await roleOf(a.id, a.member.id)).toBe('member');
    expect(await roleOf(b.id, b.member.id)).toBe('member');
  });

  it('answers 401 without credentials', async () => {
    expect((await client(server.url).delete(`/v1/organizations/${a.id}/members/${a.member.id}`)).status).toBe(401);
    expect(await roleOf(a.id, a.member.id)).toBe('member');
  });
});
