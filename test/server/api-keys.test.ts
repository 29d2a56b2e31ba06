import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let admin: Client;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, admin);
  other = await createTenant(server.url, admin);
});
afterAll(() => server?.stop());

interface CreatedKey {
  id: string;
  key: string;
  secret: string;
  role: string;
  api: Client;
}

async function createKey(creator: Client, body: Record<string, unknown> = {}): Promise<CreatedKey> {
  const reply = await creator.post('/api/v1/api-keys', { name: `key ${randomUUID().slice(0, 6)}`, ...body });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return { ...reply.body, api: client(server.url, { apiKey: { key: reply.body.key, secret: reply.body.secret } }) };
}

const listIds = async (api: Client) =>
  (await api.get('/api/v1/api-keys')).body.api_keys.map((k: { id: string }) => k.id);

describe('POST /api/v1/api-keys', () => {
  it('returns 201 with the key and the secret, once; only a hash of the secret is stored', async () => {
    const reply = await tenant.owner.api.post('/api/v1/api-keys', { name: 'CI deploys' });
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({
      id: expect.any(String),
      name: 'CI deploys',
      key: expect.stringMatching(/^tsk_[A-Za-z0-9_-]{16,}$/),
      key_prefix: expect.stringMatching(/^tsk_[A-Za-z0-9_-]{6}…$/),
      secret: expect.stringMatching(/^tsks_[A-Za-z0-9_-]{32,}$/),
      role: 'admin',
      organization_id: tenant.id,
      created_by: tenant.owner.id,
      created_at: expect.any(String),
      last_used_at: null,
    });
    const row = await server.base.db.apiKey.findUniqueOrThrow({ where: { id: reply.body.id } });
    expect(row.secretHash).not.toContain(reply.body.secret);
    expect(JSON.stringify(row)).not.toContain(reply.body.secret);

    const list = await tenant.owner.api.get('/api/v1/api-keys');
    expect(list.status).toBe(200);
    const listed = list.body.api_keys.find((k: { id: string }) => k.id === reply.body.id);
    expect(listed).toMatchObject({ id: reply.body.id, name: 'CI deploys', role: 'admin', organization_id: tenant.id });
    expect(listed).not.toHaveProperty('secret');
    expect(listed).not.toHaveProperty('key');
    expect(listed.key_prefix).toBe(reply.body.key_prefix);
    expect(reply.body.key.startsWith(listed.key_prefix.slice(0, -1))).toBe(true);
    expect(JSON.stringify(list.body)).not.toContain(reply.body.key);
    expect(JSON.stringify(list.body)).not.toContain(reply.body.secret);
    expect(JSON.stringify(list.body)).not.toContain(row.secretHash);
  });

  it('defaults the role to the creator’s (admin for owners) and takes member', async () => {
    expect((await createKey(tenant.owner.api)).role).toBe('admin');
    expect((await createKey(tenant.admin.api)).role).toBe('admin');
    expect((await createKey(tenant.admin.api, { role: 'member' })).role).toBe('member');
  });

  it('takes only admin or member as the role', async () => {
    for (const role of ['owner', 'superuser', '', 'ADMIN']) {
      const reply = await tenant.admin.api.post('/api/v1/api-keys', { name: 'too strong', role });
      expect(reply.status, role).toBe(400);
      expect(reply.body.error).toBe('invalid_request');
      expect(reply.body.details[0].path).toBe('role');
    }
    expect((await tenant.owner.api.post('/api/v1/api-keys', { name: 'too strong', role: 'owner' })).status).toBe(400);
    expect(await server.base.db.apiKey.count({ where: { name: 'too strong' } })).toBe(0);
  });

  it('is refused to members (403), and to anyone outside the organization (404)', async () => {
    const member = await tenant.member.api.post('/api/v1/api-keys', { name: 'mine' });
    expect(member.status).toBe(403);
    expect(member.body.error).toBe('forbidden');
    const foreign = await other.admin.api.post('/api/v1/api-keys', { name: 'theirs', organization_id: tenant.id });
    expect(foreign.status).toBe(404);
    expect(await server.base.db.apiKey.count({ where: { name: { in: ['mine', 'theirs'] } } })).toBe(0);
    expect((await client(server.url).post('/api/v1/api-keys', { name: 'anonymous' })).status).toBe(401);
  });

  it('lets a platform administrator manage any organization’s keys, and answers 404 for an unknown one', async () => {
    const created = await createKey(admin, { organization_id: other.id, role: 'member' });
    expect(created).toMatchObject({ organization_id: other.id, role: 'member' });
    expect(
      (await admin.get(`/api/v1/api-keys?organization_id=${other.id}`)).body.api_keys.map((k: { id: string }) => k.id),
    ).toContain(created.id);
    expect((await admin.post('/api/v1/api-keys', { name: 'ghost', organization_id: randomUUID() })).status).toBe(404);
    expect((await admin.get(`/api/v1/api-keys?organization_id=${randomUUID()}`)).status).toBe(404);
    expect((await tenant.admin.api.get(`/api/v1/api-keys?organization_id=${other.id}`)).status).toBe(404);
  });

  it('needs a name', async () => {
    const reply = await tenant.admin.api.post('/api/v1/api-keys', {});
    expect(reply.status).toBe(400);
    expect(reply.body.details[0].path).toBe('name');
    expect((await tenant.admin.api.post('/api/v1/api-keys', { name: '   ' })).status).toBe(400);
  });

  it('never creates a key above the role of the key that asks', async () => {
    const memberKey = await createKey(tenant.admin.api, { role: 'member' });
    expect((await memberKey.api.post('/api/v1/api-keys', { name: 'escalate', role: 'admin' })).status).toBe(403);
    expect((await memberKey.api.post('/api/v1/api-keys', { name: 'escalate' })).status).toBe(403);
    const adminKey = await createKey(tenant.admin.api);
    const child = await adminKey.api.post('/api/v1/api-keys', { name: 'child', role: 'member' });
    expect(child.status).toBe(201);
    expect(child.body).toMatchObject({ role: 'member', organization_id: tenant.id, created_by: tenant.admin.id });
  });
});

describe('authenticating with an API key', () => {
  it('works as Authorization: Bearer <key> with X-API-Secret, acting in its organization', async () => {
    const key = await createKey(tenant.admin.api);
    const list = await key.api.get('/api/v1/api-keys');
    expect(list.status).toBe(200);
    expect(list.body.api_keys.map((k: { id: string }) => k.id)).toContain(key.id);
    const users = await key.api.get('/v1/users');
    expect(users.status).toBe(200);
    expect(users.body.users.map((u: { id: string }) => u.id)).toContain(tenant.member.id);
    expect(users.body.users.map((u: { id: string }) => u.id)).not.toContain(other.member.id);
    expect((await key.api.get(`/v1/organizations/${other.id}`)).status).toBe(404);
  });

  it('answers 401 without the secret, with a wrong one, or with another key’s', async () => {
    const key = await createKey(tenant.admin.api);
    const another = await createKey(tenant.admin.api);
    const cases: [string, Record<string, string>][] = [
      ['no secret', { authorization: `Bearer ${key.key}` }],
      ['an empty secret', { authorization: `Bearer ${key.key}`, 'x-api-secret': '' }],
      ['a wrong secret', { authorization: `Bearer ${key.key}`, 'x-api-secret': `${key.secret.slice(0, -2)}xx` }],
      ['another key’s secret', { authorization: `Bearer ${key.key}`, 'x-api-secret': another.secret }],
      ['the secret as the bearer', { authorization: `Bearer ${key.secret}`, 'x-api-secret': key.key }],
      ['an unknown key', { authorization: `Bearer tsk_${randomUUID()}`, 'x-api-secret': key.secret }],
    ];
    for (const [what, headers] of cases) {
      const reply = await client(server.url).get('/api/v1/api-keys', headers);
      expect(reply.status, what).toBe(401);
      expect(['invalid_token', 'unauthenticated'], what).toContain(reply.body.error);
      expect(reply.headers.get('www-authenticate'), what).toMatch(/^Bearer/);
    }
    expect((await server.base.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).lastUsedAt).toBeNull();
    const failures = await server.base.db.auditLog.count({ where: { action: 'auth.api_key', outcome: 'failure' } });
    expect(failures).toBeGreaterThanOrEqual(cases.length - 1);
  });

  it('records when the key was last used', async () => {
    const key = await createKey(tenant.admin.api);
    const before = Date.now();
    expect((await key.api.get('/v1/users')).status).toBe(200);
    const row = await server.base.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
    expect(row.lastUsedAt).not.toBeNull();
    expect(row.lastUsedAt!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    const listed = (await tenant.admin.api.get('/api/v1/api-keys')).body.api_keys.find(
      (k: { id: string }) => k.id === key.id,
    );
    expect(Date.parse(listed.last_used_at)).toBe(row.lastUsedAt!.getTime());
  });

  it('gives a member-role key 403 on administrators’ routes', async () => {
    const key = await createKey(tenant.admin.api, { role: 'member' });
    expect((await key.api.get('/api/v1/api-keys')).status).toBe(403);
    expect((await key.api.get(`/v1/organizations/${tenant.id}/members`)).status).toBe(403);
    expect(
      (await key.api.post(`/v1/organizations/${tenant.id}/invitations`, { email: 'x@example.test', role: 'member' }))
        .status,
    ).toBe(403);
    expect((await key.api.patch(`/v1/organizations/${tenant.id}`, { name: 'Renamed by a key' })).status).toBe(403);
    expect((await key.api.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(403);
    // ...while what a member may do works.
    expect((await key.api.get(`/v1/organizations/${tenant.id}`)).status).toBe(200);
  });
});

describe('revoking an API key', () => {
  const revokers: [string, (api: Client, id: string) => Promise<{ status: number; body: any }>][] = [
    ['DELETE /api/v1/api-keys with {"id"}', (api, id) => api.delete('/api/v1/api-keys', { id })],
    ['DELETE /api/v1/api-keys?id=', (api, id) => api.delete(`/api/v1/api-keys?id=${encodeURIComponent(id)}`)],
    ['DELETE /api/v1/api-keys/{id}', (api, id) => api.delete(`/api/v1/api-keys/${encodeURIComponent(id)}`)],
  ];

  it.each(revokers)('%s answers 204; the key then answers 401 and leaves the list', async (_, revoke) => {
    const key = await createKey(tenant.admin.api);
    expect((await key.api.get('/v1/users')).status).toBe(200);
    const reply = await revoke(tenant.admin.api, key.id);
    expect(reply.status, JSON.stringify(reply.body)).toBe(204);
    expect(reply.body).toBeNull();
    const after = await key.api.get('/v1/users');
    expect(after.status).toBe(401);
    expect(await listIds(tenant.admin.api)).not.toContain(key.id);
    expect((await server.base.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).revokedAt).not.toBeNull();
    // A second revocation finds nothing to revoke.
    expect((await revoke(tenant.admin.api, key.id)).status).toBe(404);
  });

  it.each(revokers)('%s answers 404 for another tenant’s key, which keeps working', async (_, revoke) => {
    const theirs = await createKey(other.owner.api);
    const reply = await revoke(tenant.admin.api, theirs.id);
    expect(reply.status).toBe(404);
    expect(reply.body.error).toBe('not_found');
    expect(reply.body).toEqual((await revoke(tenant.admin.api, randomUUID())).body);
    expect((await theirs.api.get('/v1/users')).status).toBe(200);
  });

  it('lets a key revoke itself', async () => {
    const key = await createKey(tenant.admin.api);
    expect((await key.api.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(204);
    expect((await key.api.get('/v1/users')).status).toBe(401);
  });

  it('is refused to members of the organization: 403', async () => {
    const key = await createKey(tenant.admin.api);
    expect((await tenant.member.api.delete('/api/v1/api-keys', { id: key.id })).status).toBe(403);
    expect((await key.api.get('/v1/users')).status).toBe(200);
  });

  it('needs an id', async () => {
    const reply = await tenant.admin.api.delete('/api/v1/api-keys', {});
    expect(reply.status).toBe(400);
    expect(reply.body.details[0].path).toBe('id');
    expect((await tenant.admin.api.delete('/api/v1/api-keys')).status).toBe(400);
    expect((await tenant.admin.api.delete('/api/v1/api-keys', { id: 'x', name: 'y' })).status).toBe(400);
  });
});

describe('events', () => {
  it('records api_key.created and api_key.revoked for the key’s organization', async () => {
    const key = await createKey(tenant.admin.api, { name: 'evented', role: 'member' });
    expect((await tenant.admin.api.delete(`/api/v1/api-keys/${key.id}`)).status).toBe(204);
    const events = await server.base.db.event.findMany({
      where: { kind: { in: ['api_key.created', 'api_key.revoked'] }, organizationId: tenant.id },
    });
    const about = events.filter((e) => JSON.parse(e.body).data.apiKey.id === key.id);
    expect(about.map((e) => e.kind).sort()).toEqual(['api_key.created', 'api_key.revoked']);
    const created = about.find((e) => e.kind === 'api_key.created')!;
    expect(JSON.parse(created.body).data.apiKey).toEqual({ id: key.id, name: 'evented', role: 'member' });
    expect(JSON.stringify(about)).not.toContain(key.secret);
    const audit = await server.base.db.auditLog.findMany({ where: { targetId: key.id } });
    expect(audit.map((a) => a.action).sort()).toEqual(['api_key.create', 'api_key.revoke']);
  });
});
