import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let platform: Client;
let operatorId: string;
let a: Tenant;
let b: Tenant;

const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

beforeAll(async () => {
  server = await startTestServer();
  const signedIn = await signIn(server.url, ADMIN.email, ADMIN.password);
  platform = signedIn.api;
  operatorId = signedIn.login.organization.id;
  a = await createTenant(server.url, platform, 'Tenant A');
  b = await createTenant(server.url, platform, 'Tenant B');
});
afterAll(() => server?.stop());

const eventsOf = (organizationId: string) =>
  server.base.db.event.findMany({ where: { organizationId }, orderBy: { id: 'asc' } });
const auditOf = (organizationId: string, action: string) =>
  server.base.db.auditLog.findMany({ where: { organizationId, action } });

describe('POST /v1/organizations', () => {
  it('creates an organization owned by the caller', async () => {
    const founder = await addPerson(server.url, a.owner.api, a.id, 'member', 'founder');

    const reply = await founder.api.post('/v1/organizations', { name: '  Acme Labs ' });

    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({
      id: expect.any(String),
      name: 'Acme Labs',
      role: 'owner',
      is_operator: false,
      require_mfa: false,
      allow_metadata_clients: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const mine = await founder.api.get('/api/v1/orgs');
    expect(mine.body).toContainEqual({ id: reply.body.id, name: 'Acme Labs', role: 'owner' });
    const members = await founder.api.get(`/v1/organizations/${reply.body.id}/members`);
    expect(members.body.members.map((m: any) => [m.user_id, m.role])).toEqual([[founder.id, 'owner']]);
  });

  it('writes organization.created, member.added and organization.member.added, and an audit entry', async () => {
    const founder = await addPerson(server.url, a.owner.api, a.id, 'member', 'founder');
    const reply = await founder.api.post('/v1/organizations', { name: 'Evented' });
    const id = reply.body.id;

    const events = await eventsOf(id);

    expect(events.map((e) => e.kind)).toEqual(['organization.created', 'member.added', 'organization.member.added']);
    const [created, added, orgAdded] = events.map((e) => JSON.parse(e.body));
    expect(created.organization).toEqual({ id, name: 'Evented' });
    expect(created.data.organization).toMatchObject({ id, name: 'Evented' });
    const memberData = {
      organization_id: id,
      member_id: founder.id,
      role: 'owner',
      user: { id: founder.id, email: founder.email, name: 'founder' },
    };
    // The same facts, each list's case (docs/architecture.md#events-webhooks-and-the-outbox): member.added is list A, organization.member.added list B.
    expect(added.data).toEqual({ organizationId: id, memberId: founder.id, role: 'owner', user: memberData.user });
    expect(orgAdded.data).toEqual(memberData);
    const audit = await auditOf(id, 'organization.create');
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actorType: 'user',
      actorId: founder.id,
      targetType: 'organization',
      targetId: id,
      outcome: 'success',
    });
  });

  it('answers 400 with details for a missing or blank name and for unknown fields', async () => {
    const missing = await a.member.api.post('/v1/organizations', {});
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    // GraphQL rejects the missing field before the service runs; the problem still names the field.
    expect(missing.body.details).toHaveLength(1);
    expect(`${missing.body.details[0].path} ${missing.body.details[0].message}`).toMatch(/\bname\b/);

    const blank = await a.member.api.post('/v1/organizations', { name: '   ' });
    expect(blank.status).toBe(400);
    expect(blank.body.details).toEqual([{ path: 'name', message: 'must not be empty' }]);

    const unknown = await a.member.api.post('/v1/organizations', { name: 'X', plan: 'gold' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.details).toEqual([expect.objectContaining({ path: 'plan' })]);
  });

  it('answers 401 without credentials and 403 for an API key (an organization needs a person as owner)', async () => {
    const anonymous = await client(server.url).post('/v1/organizations', { name: 'Nobody' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);

    const key = await a.admin.api.post('/api/v1/api-keys', { name: 'ci' });
    expect(key.status).toBe(201);
    const byKey = await client(server.url, { apiKey: { key: key.body.key, secret: key.body.secret } }).post(
      '/v1/organizations',
      { name: 'By key' },
    );
    expect(byKey.status).toBe(403);
  });
});

describe('GET /v1/organizations', () => {
  it('lists every organization for a platform admin', async () => {
    const reply = await platform.get('/v1/organizations?limit=100');

    expect(reply.status).toBe(200);
    const byId = new Map(reply.body.organizations.map((o: any) => [o.id, o]));
    expect(byId.get(operatorId)).toMatchObject({ name: 'Operator', is_operator: true, role: 'owner' });
    // The platform admin left both tenants after setting them up: it sees them, without a role there.
    expect(byId.get(a.id)).toMatchObject({ name: 'Tenant A', is_operator: false, role: null });
    expect(byId.get(b.id)).toMatchObject({ name: 'Tenant B', role: null });
    expect(reply.body.next_cursor).toBeNull();
  });

  it("lists only the caller's organizations for everyone else, with its role", async () => {
    const reply = await b.admin.api.get('/v1/organizations');

    expect(reply.status).toBe(200);
    expect(reply.body.organizations).toEqual([expect.objectContaining({ id: b.id, name: 'Tenant B', role: 'admin' })]);
  });

  it('pages with ?limit= and next_cursor', async () => {
    const first = await platform.get('/v1/organizations?limit=2');
    expect(first.body.organizations).toHaveLength(2);
    expect(first.body.next_cursor).toEqual(first.body.organizations[1].id);

    const second = await platform.get(`/v1/organizations?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.status).toBe(200);
    const seen = [...first.body.organizations, ...second.body.organizations].map((o: any) => o.id);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining([operatorId, a.id]));
  });

  it('answers 400 for a bad limit and 401 without credentials', async () => {
    expect((await platform.get('/v1/organizations?limit=0')).status).toBe(400);
    expect((await platform.get('/v1/organizations?limit=101')).status).toBe(400);
    expect((await platform.get('/v1/organizations?limit=ten')).status).toBe(400);
    expect((await client(server.url).get('/v1/organizations')).status).toBe(401);
  });
});

describe('GET /v1/organizations/{id}', () => {
  it('returns the organization with the caller role to any member', async () => {
    const reply = await a.member.api.get(`/v1/organizations/${a.id}`);

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: a.id, name: 'Tenant A', role: 'member', is_operator: false });
  });

  it("answers 404 for another tenant's organization, exactly as for an unknown one", async () => {
    const other = await a.owner.api.get(`/v1/organizations/${b.id}`);
    const unknown = await a.owner.api.get(`/v1/organizations/${UNKNOWN_ID}`);

    expect(other.status).toBe(404);
    expect(other.body).toEqual({ error: 'not_found', error_description: 'Organization not found' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(other.body);
  });

  it('lets a platform admin read any organization, and answers it 404 for an unknown one', async () => {
    const tenant = await platform.get(`/v1/organizations/${b.id}`);
    expect(tenant.status).toBe(200);
    expect(tenant.body).toMatchObject({ id: b.id, name: 'Tenant B', role: null });

    const unknown = await platform.get(`/v1/organizations/${UNKNOWN_ID}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
  });
});

describe('PATCH /v1/organizations/{id}', () => {
  it('renames the organization for an admin, with an event and an audit entry', async () => {
    const reply = await a.admin.api.patch(`/v1/organizations/${a.id}`, { name: 'Tenant A Renamed' });

    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: a.id, name: 'Tenant A Renamed', role: 'admin' });
    expect((await a.member.api.get(`/v1/organizations/${a.id}`)).body.name).toBe('Tenant A Renamed');
    const updated = (await eventsOf(a.id)).filter((e) => e.kind === 'organization.updated');
    expect(updated.map((e) => JSON.parse(e.body).data)).toContainEqual({
      organization: { id: a.id, name: 'Tenant A Renamed' },
      changes: ['name'],
    });
    const audit = await auditOf(a.id, 'organization.update');
    expect(audit).toContainEqual(
      expect.objectContaining({ actorId: a.admin.id, targetId: a.id, details: { fields: ['name'] } }),
    );
    await a.owner.api.patch(`/v1/organizations/${a.id}`, { name: 'Tenant A' });
  });

  it('answers 403 to a member', async () => {
    const reply = await a.member.api.patch(`/v1/organizations/${a.id}`, { name: 'Mine now' });

    expect(reply.status).toBe(403);
    expect(reply.body.error).toBe('forbidden');
    expect((await a.owner.api.get(`/v1/organizations/${a.id}`)).body.name).toBe('Tenant A');
  });

  it("answers 404 to another tenant's owner and leaves the organization unchanged", async () => {
    const reply = await b.owner.api.patch(`/v1/organizations/${a.id}`, { name: 'Taken over' });

    expect(reply.status).toBe(404);
    expect((await a.owner.api.get(`/v1/organizations/${a.id}`)).body.name).toBe('Tenant A');
  });

  it('answers 400 for a blank name or an unknown field', async () => {
    const blank = await a.owner.api.patch(`/v1/organizations/${a.id}`, { name: '' });
    expect(blank.status).toBe(400);
    expect(blank.body.details).toEqual([{ path: 'name', message: 'must not be empty' }]);

    const unknown = await a.owner.api.patch(`/v1/organizations/${a.id}`, { is_operator: true });
    expect(unknown.status).toBe(400);
    expect(unknown.body.details).toEqual([expect.objectContaining({ path: 'is_operator' })]);
  });

  it('lets a platform admin rename any organization, and answers 404 for an unknown one', async () => {
    const reply = await platform.patch(`/v1/organizations/${b.id}`, { name: 'Tenant B (support)' });
    expect(reply.status).toBe(200);
    expect(reply.body.name).toBe('Tenant B (support)');
    await platform.patch(`/v1/organizations/${b.id}`, { name: 'Tenant B' });

    const unknown = await platform.patch(`/v1/organizations/${UNKNOWN_ID}`, { name: 'Ghost' });
    expect(unknown.status).toBe(404);
  });
});

describe('GET /api/v1/orgs', () => {
  it("lists exactly the caller's memberships, with its role in each", async () => {
    // b.member is invited into A as an admin: two organizations, two roles.
    const invite = await a.owner.api.post(`/v1/organizations/${a.id}/invitations`, {
      email: b.member.email,
      role: 'admin',
    });
    expect(invite.status).toBe(201);
    expect((await b.member.api.post('/api/v1/invitations/accept', { token: invite.body.token })).status).toBe(200);

    const reply = await b.member.api.get('/api/v1/orgs');

    expect(reply.status).toBe(200);
    expect(reply.body).toEqual(
      expect.arrayContaining([
        { id: b.id, name: 'Tenant B', role: 'member' },
        { id: a.id, name: 'Tenant A', role: 'admin' },
      ]),
    );
    expect(reply.body).toHaveLength(2);
  });

  it('does not list every organization for a platform admin, only its own', async () => {
    const reply = await platform.get('/api/v1/orgs');

    expect(reply.status).toBe(200);
    expect(reply.body).toEqual([{ id: operatorId, name: 'Operator', role: 'owner' }]);
  });

  it('answers 401 without credentials', async () => {
    expect((await client(server.url).get('/api/v1/orgs')).status).toBe(401);
  });
});
