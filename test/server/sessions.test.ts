// Where a person is signed in (docs/architecture.md#identity-sessions-and-tokens): GET /api/v1/auth/sessions lists the
// caller's live sessions, DELETE /api/v1/auth/sessions/{id} ends one, DELETE /api/v1/auth/sessions ends all but the
// current one. Only a session may do this; a session's last use is written at most once a minute.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { movableClock, MINUTE } from '../helpers/clock.ts';
import { accessTokenOf, registerClient } from '../helpers/oauth.ts';

const clock = movableClock();
let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer({ clock });
  const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
  tenant = await createTenant(server.url, api);
});
afterAll(() => server?.stop());

/** Someone new, so that ending sessions touches no one else's. */
const newPerson = (): Promise<Person> => addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'sessions');

/** A sign-in from a browser of its own: the user agent is what the list shows. */
async function signInAs(person: Person, userAgent: string): Promise<{ api: Client; token: string; id: string }> {
  const reply = await client(server.url).post(
    '/api/v1/auth/login',
    { email: person.email, password: PASSWORD },
    { 'user-agent': userAgent },
  );
  expect(reply.status).toBe(200);
  const api = client(server.url, { token: reply.body.token });
  const session = await api.get('/api/v1/auth/session');
  return { api, token: reply.body.token, id: session.body.session.id };
}

const sessionsOf = async (api: Client) => {
  const reply = await api.get('/api/v1/auth/sessions');
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.sessions as {
    id: string;
    created_at: string;
    last_used_at: string;
    expires_at: string;
    ip: string | null;
    user_agent: string | null;
    organization: { id: string; name: string } | null;
    current: boolean;
  }[];
};

const revokedEvents = (sessionId: string) =>
  server.base.db.event.count({ where: { kind: 'session.revoked', body: { contains: sessionId } } });
const revokeAudits = (sessionId: string) =>
  server.base.db.auditLog.count({
    where: { action: 'auth.session.revoke', targetType: 'session', targetId: sessionId },
  });

describe('GET /api/v1/auth/sessions', () => {
  it('lists the live sessions with address, user agent and organization, the current one marked, newest use first', async () => {
    const person = await newPerson();
    const laptop = await signInAs(person, 'Laptop/1.0');
    const phone = await signInAs(person, 'Phone/2.0');
    const ended = await signInAs(person, 'Gone/3.0');
    expect((await ended.api.post('/api/v1/auth/logout')).status).toBe(204);

    // A minute later the laptop is used again: its last use is written, and it comes first.
    clock.advance(MINUTE + 1);
    const sessions = await sessionsOf(laptop.api);
    const byId = new Map(sessions.map((s) => [s.id, s]));
    expect(byId.has(ended.id)).toBe(false);
    expect(byId.get(laptop.id)).toMatchObject({
      user_agent: 'Laptop/1.0',
      current: true,
      organization: { id: tenant.id, name: tenant.name },
    });
    expect(byId.get(phone.id)).toMatchObject({ user_agent: 'Phone/2.0', current: false });
    expect(byId.get(laptop.id)!.ip).toMatch(/127\.0\.0\.1/);
    expect(sessions.filter((s) => s.current)).toHaveLength(1);
    // Newest use first.
    expect(sessions[0]!.id).toBe(laptop.id);
    const times = sessions.map((s) => Date.parse(s.last_used_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    // The person's own sessions only.
    expect(sessions.every((s) => s.id !== tenant.member.id)).toBe(true);
    expect((await sessionsOf(phone.api)).find((s) => s.current)!.id).toBe(phone.id);
  });

  it('writes the last use at most once a minute', async () => {
    const person = await newPerson();
    const browser = await signInAs(person, 'Clocked/1.0');
    const lastUsed = async () => (await sessionsOf(browser.api)).find((s) => s.current)!.last_used_at;
    const first = await lastUsed();
    clock.advance(30);
    expect(await lastUsed()).toBe(first);
    clock.advance(31);
    const later = await lastUsed();
    expect(Date.parse(later) - Date.parse(first)).toBeGreaterThanOrEqual(MINUTE * 1000);
    clock.advance(10);
    expect(await lastUsed()).toBe(later);
  });
});

describe('DELETE /api/v1/auth/sessions/{id}', () => {
  it("ends one of the caller's sessions: its token stops working, session.revoked is emitted and it is audited", async () => {
    const person = await newPerson();
    const mine = await signInAs(person, 'Mine/1.0');
    const other = await signInAs(person, 'Other/1.0');
    const reply = await mine.api.delete(`/api/v1/auth/sessions/${other.id}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(204);
    expect(reply.headers.get('set-cookie')).toBeNull();
    expect((await other.api.get('/api/v1/auth/session')).status).toBe(401);
    expect((await mine.api.get('/api/v1/auth/session')).status).toBe(200);
    expect(await revokedEvents(other.id)).toBeGreaterThan(0);
    expect(await revokeAudits(other.id)).toBe(1);
    // Already ended: not found.
    expect((await mine.api.delete(`/api/v1/auth/sessions/${other.id}`)).status).toBe(404);
  });

  it('ends the current session too, which signs out and clears the cookie', async () => {
    const person = await newPerson();
    const mine = await signInAs(person, 'Mine/1.0');
    const reply = await mine.api.delete(`/api/v1/auth/sessions/${mine.id}`);
    expect(reply.status).toBe(204);
    expect(reply.headers.get('set-cookie')).toMatch(/^tessera_session=;/);
    expect((await mine.api.get('/api/v1/auth/session')).status).toBe(401);
  });

  it("answers 404 for another person's session and for an unknown id, and ends nothing", async () => {
    const person = await newPerson();
    const mine = await signInAs(person, 'Mine/1.0');
    const someone = await signInAs(await newPerson(), 'Someone/1.0');
    const reply = await mine.api.delete(`/api/v1/auth/sessions/${someone.id}`);
    expect(reply.status).toBe(404);
    expect(reply.body.error).toBe('not_found');
    expect((await mine.api.delete('/api/v1/auth/sessions/00000000-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await someone.api.get('/api/v1/auth/session')).status).toBe(200);
    expect(await revokeAudits(someone.id)).toBe(0);
  });

  it('ends a session once when 20 requests end it at the same time: one 204, the others 404, no 500', async () => {
    const person = await newPerson();
    const mine = await signInAs(person, 'Mine/1.0');
    const other = await signInAs(person, 'Other/1.0');
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () => mine.api.delete(`/api/v1/auth/sessions/${other.id}`).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 204)).toHaveLength(1);
    expect(statuses.filter((s) => s === 404)).toHaveLength(19);
    expect(await revokeAudits(other.id)).toBe(1);
    expect(await server.base.db.event.count({ where: { kind: 'session.revoked', body: { contains: other.id } } })).toBe(
      1,
    );
  });

  it('refuses NUL bytes in the id with 400', async () => {
    const person = await newPerson();
    const mine = await signInAs(person, 'Mine/1.0');
    for (const id of ['a%00b', '%00']) {
      const reply = await mine.api.delete(`/api/v1/auth/sessions/${id}`);
      expect(reply.status, id).toBe(400);
      expect(reply.body.error).toBe('invalid_request');
    }
  });
});

describe('DELETE /api/v1/auth/sessions', () => {
  it('ends every session but the current one and answers how many', async () => {
    const person = await newPerson();
    const mine = await signInAs(person, 'Mine/1.0');
    const others = [await signInAs(person, 'A/1.0'), await signInAs(person, 'B/1.0')];
    const reply = await mine.api.delete('/api/v1/auth/sessions');
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    // The invitation's session of the person ends too.
    expect(reply.body).toEqual({ revoked: 3 });
    expect(reply.headers.get('set-cookie')).toBeNull();
    for (const other of others) {
      expect((await other.api.get('/api/v1/auth/session')).status).toBe(401);
      expect(await revokeAudits(other.id)).toBe(1);
      expect(await revokedEvents(other.id)).toBeGreaterThan(0);
    }
    expect((await person.api.get('/api/v1/auth/session')).status).toBe(401);
    expect((await sessionsOf(mine.api)).map((s) => s.id)).toEqual([mine.id]);
    expect((await mine.api.delete('/api/v1/auth/sessions')).body).toEqual({ revoked: 0 });
  });
});

describe('only a session manages sessions', () => {
  it('answers 403 to an API key and to an OAuth access token, and 401 without credentials', async () => {
    const created = await tenant.admin.api.post('/api/v1/api-keys', { name: 'sessions probe' });
    expect(created.status).toBe(201);
    const key = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    const app = await registerClient(tenant.owner.api, {
      name: 'sessions app',
      redirect_uris: ['https://app.example.test/cb'],
      allowed_scopes: ['openid', 'api'],
      consent_required: false,
    });
    const token = client(server.url, {
      token: await accessTokenOf(server.url, tenant.owner, app, 'https://app.example.test/cb', 'openid api'),
    });
    const target = await signInAs(tenant.owner, 'Owner/1.0');
    for (const [who, as] of [
      ['API key', key],
      ['access token', token],
    ] as const) {
      expect((await as.get('/api/v1/auth/sessions')).status, who).toBe(403);
      expect((await as.delete(`/api/v1/auth/sessions/${target.id}`)).status, who).toBe(403);
      expect((await as.delete('/api/v1/auth/sessions')).status, who).toBe(403);
    }
    expect((await target.api.get('/api/v1/auth/session')).status).toBe(200);
    const anon = client(server.url);
    expect((await anon.get('/api/v1/auth/sessions')).status).toBe(401);
    expect((await anon.delete('/api/v1/auth/sessions')).status).toBe(401);
  });

  it('GraphQL: mySessions, revokeSession and revokeOtherSessions for a session', async () => {
    const person = await newPerson();
    const mine = await signInAs(person, 'Mine/1.0');
    const other = await signInAs(person, 'Other/1.0');
    const listed = await mine.api.post('/graphql', { query: '{ mySessions { id current userAgent lastUsedAt } }' });
    expect(listed.body.data.mySessions.find((s: { current: boolean }) => s.current).id).toBe(mine.id);
    const revoked = await mine.api.post('/graphql', {
      query: 'mutation($id: ID!) { revokeSession(id: $id) { __typename ... on RevokedSession { id current } } }',
      variables: { id: other.id },
    });
    expect(revoked.body.data.revokeSession).toEqual({ __typename: 'RevokedSession', id: other.id, current: false });
    const rest = await mine.api.post('/graphql', { query: 'mutation { revokeOtherSessions }' });
    expect(rest.body.data.revokeOtherSessions).toBe(1);
  });
});
