import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn } from '../helpers/http.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
  tenant = await createTenant(server.url, api);
});
afterAll(() => server?.stop());

describe('POST /api/v1/auth/login', () => {
  it('returns a session token, the user and the organization, and sets an HttpOnly cookie', async () => {
    const reply = await client(server.url).post('/api/v1/auth/login', {
      email: tenant.member.email,
      password: PASSWORD,
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      token_type: 'Bearer',
      user: { id: tenant.member.id, email: tenant.member.email },
      organization: { id: tenant.id, role: 'member' },
    });
    expect(Date.parse(reply.body.expires_at)).toBeGreaterThan(Date.now());
    const cookie = reply.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^tessera_session=tss_/);
    expect(cookie.toLowerCase()).toContain('httponly');
    expect(cookie.toLowerCase()).toContain('samesite=lax');
  });

  it('answers 401 with one message for an unknown e-mail and a wrong password alike', async () => {
    const wrong = await client(server.url).post('/api/v1/auth/login', {
      email: tenant.member.email,
      password: 'not the password',
    });
    const unknown = await client(server.url).post('/api/v1/auth/login', {
      email: 'nobody@example.test',
      password: 'not the password',
    });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body).toEqual({ error: 'invalid_credentials', error_description: 'Invalid email or password' });
  });

  it('slows down repeated failures for one account with 429 and Retry-After', async () => {
    const email = tenant.admin.email;
    const anon = client(server.url);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await anon.post('/api/v1/auth/login', { email, password: 'guess ' + i })).status);
    expect(statuses.slice(0, 4)).toEqual([401, 401, 401, 401]);
    const blocked = await anon.post('/api/v1/auth/login', { email, password: PASSWORD });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(blocked.body.error).toBe('rate_limited');
  });

  it('records failed sign-ins in the audit log', async () => {
    await client(server.url).post('/api/v1/auth/login', { email: tenant.owner.email, password: 'wrong password here' });
    const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
    const gql = await api.post('/graphql', {
      query: `query($t: String!) { auditLogs(targetId: $t) { items { action outcome } } }`,
      variables: { t: tenant.owner.id },
    });
    expect(gql.status).toBe(200);
    // No organization manages the account, so the failed sign-in is a platform event that platform admins see
    // (test/server/audit-logs.test.ts, test/server/managed-accounts.test.ts).
    expect(gql.body.data.auditLogs.items).toContainEqual({ action: 'auth.login', outcome: 'failure' });
    const row = await server.base.db.auditLog.findFirst({
      where: { action: 'auth.login', outcome: 'failure', actorId: tenant.owner.id },
    });
    expect(row).not.toBeNull();
  });
});

describe('GET /api/v1/auth/session and POST /api/v1/auth/logout', () => {
  it('describes the session, then stops accepting the token after logout', async () => {
    const { api } = await signIn(server.url, tenant.member.email, PASSWORD);
    const session = await api.get('/api/v1/auth/session');
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({
      user: { id: tenant.member.id },
      organization: { id: tenant.id, role: 'member' },
      platform_admin: false,
    });
    expect(session.body.session.id).toBeTruthy();
    expect((await api.post('/api/v1/auth/logout')).status).toBe(204);
    const after = await api.get('/api/v1/auth/session');
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('rejects missing, malformed and unknown credentials with 401', async () => {
    const anon = client(server.url);
    expect((await anon.get('/api/v1/auth/session')).status).toBe(401);
    expect((await anon.get('/api/v1/auth/session', { authorization: 'Basic Zm9vOmJhcg==' })).status).toBe(401);
    expect((await anon.get('/api/v1/auth/session', { authorization: 'Bearer tss_forged' })).status).toBe(401);
  });
});

describe('the session version', () => {
  it('ends every session of the user when the password changes, and hands the caller a fresh one', async () => {
    const first = await signIn(server.url, tenant.member.email, PASSWORD);
    const second = await signIn(server.url, tenant.member.email, PASSWORD);
    const changed = await first.api.patch('/api/v1/users/me', {
      current_password: PASSWORD,
      password: 'a brand new password',
    });
    expect(changed.status).toBe(200);
    expect(changed.body.token).toMatch(/^tss_/);
    expect((await first.api.get('/api/v1/users/me')).status).toBe(401);
    expect((await second.api.get('/api/v1/users/me')).status).toBe(401);
    expect((await client(server.url, { token: changed.body.token }).get('/api/v1/users/me')).status).toBe(200);
    expect(
      (await client(server.url).post('/api/v1/auth/login', { email: tenant.member.email, password: PASSWORD })).status,
    ).toBe(401);
    // put it back for the other tests
    const restored = await client(server.url, { token: changed.body.token }).patch('/api/v1/users/me', {
      current_password: 'a brand new password',
      password: PASSWORD,
    });
    expect(restored.status).toBe(200);
  });

  it('needs the current password to change the password', async () => {
    const { api } = await signIn(server.url, tenant.member.email, PASSWORD);
    const missing = await api.patch('/api/v1/users/me', { password: 'another new password' });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([{ path: 'current_password', message: 'is required' }]);
    const wrong = await api.patch('/api/v1/users/me', {
      current_password: 'not it at all',
      password: 'another new password',
    });
    expect(wrong.status).toBe(401);
  });
});
