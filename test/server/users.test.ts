import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let admin: Client;
let adminId: string;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  adminId = (await admin.get('/api/v1/users/me')).body.id;
  tenant = await createTenant(server.url, admin);
  other = await createTenant(server.url, admin);
});
afterAll(() => server?.stop());

/** A fresh member of `tenant`, for tests that change or delete the person. */
const freshMember = (label = 'fresh') => addPerson(server.url, tenant.owner.api, tenant.id, 'member', label);

/** A fresh member whose address is not verified: accepting an invitation verifies it, a platform admin unmarks it. */
async function unverifiedMember() {
  const person = await freshMember('unverified');
  const reply = await admin.patch(`/v1/users/${person.id}`, { email_verified: false });
  expect(reply.body.email_verified).toBe(false);
  return person;
}

/**
 * The tokens of the /verify-email links mailed to `to`, newest first. This server sends no mail (no SMTP_URL, no
 * worker): the queued rows keep their bodies.
 */
async function verifyTokensMailedTo(to: string): Promise<string[]> {
  const mails = await server.base.db.mail.findMany({
    where: { toAddress: to, kind: 'email_change' },
    orderBy: { id: 'desc' },
  });
  return mails.map((m) => {
    const link = m.textBody
      ?.match(/https?:\/\/\S+/g)
      ?.map((u) => new URL(u))
      .find((u) => u.pathname === '/verify-email');
    if (!link) throw new Error(`no /verify-email link in the mail "${m.subject}":\n${m.textBody}`);
    return link.searchParams.get('token')!;
  });
}

/** Every user id a caller can list, following next_cursor from page to page. */
async function walk(api: Client, limit: number) {
  const ids: string[] = [];
  const pages: number[] = [];
  let cursor: string | null = null;
  do {
    const reply: { status: number; body: any } = await api.get(
      `/v1/users?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(reply.status).toBe(200);
    pages.push(reply.body.users.length);
    ids.push(...reply.body.users.map((u: { id: string }) => u.id));
    cursor = reply.body.next_cursor;
    expect(pages.length).toBeLessThan(1000);
  } while (cursor);
  return { ids, pages };
}

const memberIdsOf = async (organizationId: string) =>
  (await server.base.db.membership.findMany({ where: { organizationId }, select: { userId: true } }))
    .map((m) => m.userId)
    .sort();

const eventsAbout = async (kind: string, userId: string) =>
  (await server.base.db.event.findMany({ where: { kind } })).filter((e) => {
    const { data } = JSON.parse(e.body);
    return data?.user?.id === userId || data?.member_id === userId;
  });

describe('GET /api/v1/users/me', () => {
  it('returns the caller’s profile', async () => {
    const reply = await tenant.member.api.get('/api/v1/users/me');
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      id: tenant.member.id,
      email: tenant.member.email,
      // The invitation link reached the address.
      email_verified: true,
      name: 'member',
      picture: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      pending_email: null,
    });
    expect(reply.body).not.toHaveProperty('password_hash');
    expect(reply.body).not.toHaveProperty('passwordHash');
  });

  it('needs a signed-in person: 401 without credentials, 403 for an API key', async () => {
    expect((await client(server.url).get('/api/v1/users/me')).status).toBe(401);
    const key = await tenant.owner.api.post('/api/v1/api-keys', { name: 'not a person' });
    expect(key.status).toBe(201);
    const reply = await client(server.url, { apiKey: { key: key.body.key, secret: key.body.secret } }).get(
      '/api/v1/users/me',
    );
    expect(reply.status).toBe(403);
    expect(reply.body.error).toBe('forbidden');
  });
});

describe('PATCH /api/v1/users/me', () => {
  it('updates the name and the picture, and null removes the picture', async () => {
    const person = await freshMember();
    const reply = await person.api.patch('/api/v1/users/me', {
      name: '  Ada Lovelace ',
      picture: 'https://cdn.example.test/ada.png',
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      id: person.id,
      name: 'Ada Lovelace',
      picture: 'https://cdn.example.test/ada.png',
      email: person.email,
    });
    expect((await person.api.get('/api/v1/users/me')).body).toMatchObject({
      name: 'Ada Lovelace',
      picture: 'https://cdn.example.test/ada.png',
    });
    expect(await eventsAbout('user.updated', person.id)).toHaveLength(1);

    const cleared = await person.api.patch('/api/v1/users/me', { picture: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ name: 'Ada Lovelace', picture: null });
  });

  it('takes only an https picture', async () => {
    const person = await freshMember();
    for (const picture of [
      'http://cdn.example.test/a.png',
      'javascript:alert(1)',
      'data:image/png;base64,AAAA',
      'ftp://example.test/a.png',
      'not a url',
      `https://example.test/${'a'.repeat(3000)}`,
    ]) {
      const reply = await person.api.patch('/api/v1/users/me', { picture });
      expect(reply.status, picture).toBe(400);
      expect(reply.body.error).toBe('invalid_request');
      expect(reply.body.details.map((d: { path: string }) => d.path)).toEqual(['picture']);
    }
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: person.id } })).picture).toBeNull();
  });

  it('refuses an empty name and fields that are not the caller’s to set', async () => {
    const person = await unverifiedMember();
    expect((await person.api.patch('/api/v1/users/me', { name: '   ' })).status).toBe(400);
    const verified = await person.api.patch('/api/v1/users/me', { email_verified: true });
    expect(verified.status).toBe(400);
    expect(verified.body.details).toEqual([
      { path: 'email_verified', message: expect.stringContaining('not a known field') },
    ]);
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: person.id } })).emailVerified).toBe(false);
  });

  it('changes the e-mail address only with the current password, not to one already taken, and once the new one is proven', async () => {
    const person = await freshMember();
    const next = `renamed-${randomUUID().slice(0, 8)}@example.test`;

    const missing = await person.api.patch('/api/v1/users/me', { email: next });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([{ path: 'current_password', message: 'is required' }]);

    const wrong = await person.api.patch('/api/v1/users/me', { email: next, current_password: 'not my password' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_credentials');

    const taken = await person.api.patch('/api/v1/users/me', {
      email: tenant.owner.email.toUpperCase(),
      current_password: PASSWORD,
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toBe('conflict');

    expect(
      (await person.api.patch('/api/v1/users/me', { email: 'not an address', current_password: PASSWORD })).status,
    ).toBe(400);
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: person.id } })).email).toBe(person.email);

    // The new address is pending until the link mailed to it is used: the account keeps the old one meanwhile.
    const changed = await person.api.patch('/api/v1/users/me', {
      email: next.toUpperCase(),
      current_password: PASSWORD,
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ email: person.email, email_verified: true, pending_email: next });
    expect((await person.api.get('/api/v1/users/me')).body).toMatchObject({ email: person.email, pending_email: next });
    expect((await client(server.url).post('/api/v1/auth/login', { email: next, password: PASSWORD })).status).toBe(401);
    expect(
      (await client(server.url).post('/api/v1/auth/login', { email: person.email, password: PASSWORD })).status,
    ).toBe(200);
    expect(await eventsAbout('user.updated', person.id)).toEqual([]);
    const [token] = await verifyTokensMailedTo(next);

    const confirmed = await client(server.url).post('/api/v1/auth/verify-email', { token });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    expect(confirmed.body).toMatchObject({ id: person.id, email: next, email_verified: true });
    expect((await person.api.get('/api/v1/users/me')).body).toMatchObject({ email: next, pending_email: null });
    expect((await client(server.url).post('/api/v1/auth/login', { email: next, password: PASSWORD })).status).toBe(200);
    expect(
      (await client(server.url).post('/api/v1/auth/login', { email: person.email, password: PASSWORD })).status,
    ).toBe(401);
    expect((await eventsAbout('user.updated', person.id)).map((e) => JSON.parse(e.body).data.changes)).toEqual([
      ['email'],
    ]);
  });

  it('gives everyone but the winner of a race for the same new address a 409, not a 500', async () => {
    // Asking is not taking: each of five people asking at once for one free address is mailed a link there.
    const racers = await Promise.all([1, 2, 3, 4, 5].map(() => freshMember('racer')));
    const target = `raced-${randomUUID().slice(0, 8)}@example.test`;
    const asked = await Promise.all(
      racers.map((p) => p.api.patch('/api/v1/users/me', { email: target, current_password: PASSWORD })),
    );
    expect(asked.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(asked.every((r) => r.body.pending_email === target)).toBe(true);
    const tokens = await verifyTokensMailedTo(target);
    expect(tokens).toHaveLength(5);

    // The race is at confirmation: the unique index lets one through, the others are told the address is taken.
    const confirmed = await Promise.all(
      tokens.map((token) => client(server.url).post('/api/v1/auth/verify-email', { token })),
    );
    expect(confirmed.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect(confirmed.filter((r) => r.status === 409).every((r) => r.body.error === 'conflict')).toBe(true);
    const winner = confirmed.find((r) => r.status === 200)!.body;
    expect(winner).toMatchObject({ email: target, email_verified: true });
    expect(racers.map((p) => p.id)).toContain(winner.id);
    const holders = await server.base.db.user.findMany({
      where: { id: { in: racers.map((p) => p.id) } },
      select: { id: true, email: true },
    });
    expect(holders.filter((u) => u.email === target).map((u) => u.id)).toEqual([winner.id]);
    // Asking for it now, too, is a 409.
    const late = racers.find((p) => p.id !== winner.id)!;
    expect((await late.api.patch('/api/v1/users/me', { email: target, current_password: PASSWORD })).status).toBe(409);
  });

  it('does not ask for the password when the e-mail address stays the same', async () => {
    const person = await freshMember();
    const reply = await person.api.patch('/api/v1/users/me', {
      email: person.email.toUpperCase(),
      name: 'Same Address',
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ email: person.email, name: 'Same Address' });
  });

  it('keeps a platform administrator’s verified flag when it sets the e-mail back to itself', async () => {
    const person = await unverifiedMember();
    expect((await admin.patch(`/v1/users/${person.id}`, { email_verified: true })).status).toBe(200);
    const reply = await person.api.patch('/api/v1/users/me', { email: person.email });
    expect(reply.body.email_verified).toBe(true);
  });
});

describe('DELETE /api/v1/users/me', () => {
  it('deletes the account: 204, then its token and its password stop working', async () => {
    const person = await freshMember();
    const reply = await person.api.delete('/api/v1/users/me', { password: PASSWORD });
    expect(reply.status).toBe(204);
    expect(reply.headers.get('set-cookie') ?? '').toMatch(/^tessera_session=;/);
    const after = await person.api.get('/api/v1/users/me');
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(
      (await client(server.url).post('/api/v1/auth/login', { email: person.email, password: PASSWORD })).status,
    ).toBe(401);
    expect(await server.base.db.user.findUnique({ where: { id: person.id } })).toBeNull();
    expect(await server.base.db.membership.count({ where: { userId: person.id } })).toBe(0);
    expect(await eventsAbout('user.deleted', person.id)).toHaveLength(1);
    expect(await eventsAbout('member.removed', person.id)).toHaveLength(1);
    expect(
      (await tenant.owner.api.get(`/v1/organizations/${tenant.id}/members`)).body.members.map(
        (m: { user_id: string }) => m.user_id,
      ),
    ).not.toContain(person.id);
  });

  it('refuses the sole owner of an organization with other members: 409', async () => {
    const reply = await tenant.owner.api.delete('/api/v1/users/me', { password: PASSWORD });
    expect(reply.status).toBe(409);
    expect(reply.body.error).toBe('conflict');
    expect(await server.base.db.user.findUnique({ where: { id: tenant.owner.id } })).not.toBeNull();
    expect((await tenant.owner.api.get('/api/v1/users/me')).status).toBe(200);
  });

  it('refuses the only owner of the operator organization: the platform would have no administrator', async () => {
    const reply = await admin.delete('/api/v1/users/me', { password: ADMIN.password });
    expect(reply.status).toBe(409);
    expect(reply.body.error_description).toMatch(/operator organization/);
    expect((await admin.get('/api/v1/users/me')).status).toBe(200);
  });

  it('takes an organization nobody else belongs to along with its only owner', async () => {
    const founder = await freshMember('founder');
    const created = await founder.api.post('/v1/organizations', { name: 'Solo' });
    expect(created.status).toBe(201);
    expect((await founder.api.delete('/api/v1/users/me', { password: PASSWORD })).status).toBe(204);
    expect(await server.base.db.organization.findUnique({ where: { id: created.body.id } })).toBeNull();
    const deleted = await server.base.db.event.findMany({
      where: { kind: 'organization.deleted', organizationId: created.body.id },
    });
    expect(deleted).toHaveLength(1);
  });

  it('lets an owner go once the organization has another owner', async () => {
    const shared = await createTenant(server.url, admin);
    await addPerson(server.url, shared.owner.api, shared.id, 'owner', 'second-owner');
    expect((await shared.owner.api.delete('/api/v1/users/me', { password: PASSWORD })).status).toBe(204);
  });

  it('is not for API keys', async () => {
    const key = await tenant.owner.api.post('/api/v1/api-keys', { name: 'cannot delete people' });
    const reply = await client(server.url, { apiKey: { key: key.body.key, secret: key.body.secret } }).delete(
      '/api/v1/users/me',
    );
    expect(reply.status).toBe(403);
    expect(await server.base.db.user.findUnique({ where: { id: tenant.owner.id } })).not.toBeNull();
  });
});

describe('GET /v1/users', () => {
  it('shows a platform administrator every user', async () => {
    const { ids } = await walk(admin, 100);
    const all = (await server.base.db.user.findMany({ select: { id: true } })).map((u) => u.id).sort();
    expect([...ids].sort()).toEqual(all);
    expect(ids).toContain(tenant.member.id);
    expect(ids).toContain(other.member.id);
  });

  it('shows a tenant administrator the members of its organization, itself included, and nobody else', async () => {
    const { ids } = await walk(tenant.admin.api, 100);
    expect([...ids].sort()).toEqual(await memberIdsOf(tenant.id));
    expect(ids).toContain(tenant.admin.id);
    expect(ids).not.toContain(other.member.id);
    expect(ids).not.toContain(adminId);
  });

  it('shows a member only itself', async () => {
    const reply = await tenant.member.api.get('/v1/users');
    expect(reply.status).toBe(200);
    expect(reply.body.users.map((u: { id: string }) => u.id)).toEqual([tenant.member.id]);
    expect(reply.body.next_cursor).toBeNull();
    expect(reply.body.users[0]).toMatchObject({
      id: tenant.member.id,
      email: tenant.member.email,
      email_verified: true,
    });
  });

  it('shows an admin API key its organization’s members', async () => {
    const key = await tenant.owner.api.post('/api/v1/api-keys', { name: 'directory' });
    const { ids } = await walk(client(server.url, { apiKey: { key: key.body.key, secret: key.body.secret } }), 100);
    expect([...ids].sort()).toEqual(await memberIdsOf(tenant.id));
  });

  it('walks every page with ?limit=1 and next_cursor', async () => {
    const full = await walk(admin, 100);
    const paged = await walk(admin, 1);
    expect(paged.ids).toEqual(full.ids);
    expect(new Set(paged.ids).size).toBe(paged.ids.length);
    expect(paged.pages.every((n) => n === 1)).toBe(true);
    expect(paged.ids.length).toBeGreaterThan(5);
    // Paging keeps to what the caller may see.
    const tenantPaged = await walk(tenant.admin.api, 1);
    expect([...tenantPaged.ids].sort()).toEqual(await memberIdsOf(tenant.id));
  });

  it('answers 400 for a limit outside 1..100 or not a whole number', async () => {
    for (const limit of ['0', '101', 'abc', '-1', '1.5', '']) {
      const reply = await admin.get(`/v1/users?limit=${limit}`);
      expect(reply.status, `limit=${limit}`).toBe(400);
      expect(reply.body.error).toBe('invalid_request');
      expect(reply.body.details?.[0]?.path, `limit=${limit}`).toBe('limit');
    }
    expect((await admin.get('/v1/users?limit=100')).status).toBe(200);
  });
});

describe('GET /v1/users/{id}', () => {
  it('shows callers the users they may see', async () => {
    expect((await tenant.member.api.get(`/v1/users/${tenant.member.id}`)).body).toMatchObject({
      id: tenant.member.id,
      email: tenant.member.email,
    });
    expect((await tenant.admin.api.get(`/v1/users/${tenant.member.id}`)).status).toBe(200);
    expect((await admin.get(`/v1/users/${other.member.id}`)).status).toBe(200);
  });

  it('answers 404 for another tenant’s user, the same as for an unknown id', async () => {
    const foreign = await tenant.admin.api.get(`/v1/users/${other.member.id}`);
    const unknown = await tenant.admin.api.get(`/v1/users/${randomUUID()}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(unknown.body);
    expect(foreign.body.error).toBe('not_found');
    expect((await other.owner.api.get(`/v1/users/${tenant.admin.id}`)).status).toBe(404);
    expect((await tenant.member.api.get(`/v1/users/${tenant.admin.id}`)).status).toBe(404);
    expect((await tenant.admin.api.get(`/v1/users/${adminId}`)).status).toBe(404);
  });
});

describe('PATCH /v1/users/{id}', () => {
  it('lets users update themselves, but not mark their own e-mail verified', async () => {
    const person = await unverifiedMember();
    const reply = await person.api.patch(`/v1/users/${person.id}`, {
      name: 'Self Service',
      picture: 'https://example.test/me.png',
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: person.id, name: 'Self Service', picture: 'https://example.test/me.png' });
    const verify = await person.api.patch(`/v1/users/${person.id}`, { email_verified: true });
    expect(verify.status).toBe(403);
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: person.id } })).emailVerified).toBe(false);
  });

  it('lets a platform administrator update anyone, email_verified included', async () => {
    const person = await unverifiedMember();
    const reply = await admin.patch(`/v1/users/${person.id}`, { name: 'Verified Person', email_verified: true });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: person.id, name: 'Verified Person', email_verified: true });
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: person.id } })).emailVerified).toBe(true);
    expect(await eventsAbout('user.email.verified', person.id)).toHaveLength(1);
  });

  it('refuses a tenant administrator on another user: 403 in its organization, 404 outside it', async () => {
    const before = await server.base.db.user.findUniqueOrThrow({ where: { id: tenant.member.id } });
    const same = await tenant.admin.api.patch(`/v1/users/${tenant.member.id}`, { name: 'Renamed By Admin' });
    expect(same.status).toBe(403);
    expect(same.body.error).toBe('forbidden');
    expect((await tenant.owner.api.patch(`/v1/users/${tenant.member.id}`, { name: 'Renamed By Owner' })).status).toBe(
      403,
    );
    expect((await tenant.admin.api.patch(`/v1/users/${other.member.id}`, { name: 'Renamed' })).status).toBe(404);
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: tenant.member.id } })).name).toBe(before.name);
  });

  it('refuses invalid and unknown fields', async () => {
    expect((await admin.patch(`/v1/users/${tenant.member.id}`, { picture: 'http://example.test/a.png' })).status).toBe(
      400,
    );
    expect((await admin.patch(`/v1/users/${tenant.member.id}`, { email_verified: 'yes' })).status).toBe(400);
    const email = await admin.patch(`/v1/users/${tenant.member.id}`, { email: 'someone-else@example.test' });
    expect(email.status).toBe(400);
    expect(email.body.details[0].path).toBe('email');
  });
});

describe('DELETE /v1/users/{id}', () => {
  it('refuses a tenant administrator: 403 in its organization, 404 outside it', async () => {
    expect((await tenant.admin.api.delete(`/v1/users/${tenant.member.id}`)).status).toBe(403);
    expect((await tenant.admin.api.delete(`/v1/users/${other.member.id}`)).status).toBe(404);
    expect((await tenant.member.api.delete(`/v1/users/${tenant.admin.id}`)).status).toBe(404);
    expect(
      await server.base.db.user.count({ where: { id: { in: [tenant.member.id, other.member.id, tenant.admin.id] } } }),
    ).toBe(3);
  });

  it('lets a platform administrator delete a user, whose token then stops working', async () => {
    const person = await freshMember();
    const reply = await admin.delete(`/v1/users/${person.id}`);
    expect(reply.status).toBe(204);
    expect((await admin.get(`/v1/users/${person.id}`)).status).toBe(404);
    expect((await person.api.get('/api/v1/users/me')).status).toBe(401);
    expect(await eventsAbout('user.deleted', person.id)).toHaveLength(1);
    expect((await admin.delete(`/v1/users/${person.id}`)).status).toBe(404);
  });

  it('lets users delete themselves, with their password again', async () => {
    const person = await freshMember();
    expect((await person.api.delete(`/v1/users/${person.id}`)).status).toBe(400);
    expect((await person.api.delete(`/v1/users/${person.id}`, { password: PASSWORD })).status).toBe(204);
    expect(await server.base.db.user.findUnique({ where: { id: person.id } })).toBeNull();
  });

  it('refuses to delete the sole owner of an organization with other members, even for a platform administrator', async () => {
    const reply = await admin.delete(`/v1/users/${other.owner.id}`);
    expect(reply.status).toBe(409);
    expect(await server.base.db.user.findUnique({ where: { id: other.owner.id } })).not.toBeNull();
  });
});
