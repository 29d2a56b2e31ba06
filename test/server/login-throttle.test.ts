// Sign-in throttling under parallel guessing: a wrong password is counted in one statement and answered by that
// count, so a burst cannot learn more guesses than the limit; refused attempts are audited, aggregated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Reply } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
  tenant = await createTenant(server.url, api);
  other = await createTenant(server.url, api);
});
afterAll(() => server?.stop());

const attempt = (email: string, password: string) =>
  client(server.url).post('/api/v1/auth/login', { email, password }, { 'user-agent': 'guesser/1.0' });

const statusCounts = (replies: Reply[]) =>
  replies.reduce<Record<number, number>>((n, r) => ({ ...n, [r.status]: (n[r.status] ?? 0) + 1 }), {});

describe('parallel wrong passwords for one account', () => {
  it('answers exactly 5 as wrong and refuses the rest with 429 and Retry-After', async () => {
    // given an account in two organizations
    const victim = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'victim');
    const invite = await other.owner.api.post(`/v1/organizations/${other.id}/invitations`, {
      email: victim.email,
      role: 'member',
    });
    expect((await victim.api.post('/api/v1/invitations/accept', { token: invite.body.token })).status).toBe(200);

    // when 40 wrong passwords arrive at once
    const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => attempt(victim.email, `wrong guess ${i}`)));

    // then 5 were answered as wrong, the other 35 throttled
    expect(statusCounts(replies)).toEqual({ 401: 5, 429: 35 });
    for (const reply of replies.filter((r) => r.status === 429)) {
      expect(reply.body.error).toBe('rate_limited');
      expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // and the right password is refused too while the lock lasts
    expect((await attempt(victim.email, PASSWORD)).status).toBe(429);

    // and the platform saw exactly the 5 checked failures, with the e-mail, address and agent: no organization
    // manages the account, so neither of those it joined sees attempts on it (docs/architecture.md#managed-accounts)
    for (const organizationId of [tenant.id, other.id]) {
      expect(
        await server.base.db.auditLog.count({ where: { organizationId, outcome: 'failure', targetId: victim.id } }),
      ).toBe(0);
    }
    const failures = await server.base.db.auditLog.findMany({
      where: { organizationId: null, action: 'auth.login', outcome: 'failure', targetId: victim.id },
    });
    expect(failures).toHaveLength(5);
    for (const f of failures) {
      expect(f).toMatchObject({
        ip: expect.stringMatching(/127\.0\.0\.1/),
        userAgent: 'guesser/1.0',
        details: { email: victim.email, reason: 'wrong_password' },
      });
    }
    // and the 36 refusals as one entry that counts them
    const throttled = await server.base.db.auditLog.findMany({
      where: { organizationId: null, action: 'auth.login.throttled', targetId: victim.id },
    });
    expect(throttled).toHaveLength(1);
    expect(throttled[0]).toMatchObject({
      outcome: 'failure',
      actorId: victim.id,
      ip: expect.stringMatching(/127\.0\.0\.1/),
      userAgent: 'guesser/1.0',
    });
    expect(throttled[0]!.details).toMatchObject({ email: victim.email, reason: 'account_locked', count: 36 });
  });

  it('answers a right password at once, and clears the count, while under the limit', async () => {
    const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'typo');
    const wrong = await Promise.all(Array.from({ length: 4 }, (_, i) => attempt(person.email, `typo ${i}`)));
    expect(statusCounts(wrong)).toEqual({ 401: 4 });
    expect((await attempt(person.email, PASSWORD)).status).toBe(200);
    // The count starts again: four more mistakes still do not lock the account.
    for (let i = 0; i < 4; i++) expect((await attempt(person.email, `again ${i}`)).status).toBe(401);
    expect((await attempt(person.email, PASSWORD)).status).toBe(200);
  });

  it('records a throttled attempt on an unknown e-mail as a platform event', async () => {
    const email = 'nobody-throttled@example.test';
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => attempt(email, `guess ${i}`)));
    expect(statusCounts(replies)).toEqual({ 401: 5, 429: 3 });
    const throttled = await server.base.db.auditLog.findMany({
      where: { action: 'auth.login.throttled', details: { path: ['email'], equals: email } },
    });
    expect(throttled).toEqual([
      expect.objectContaining({ organizationId: null, actorId: null, actorType: 'anonymous' }),
    ]);
    expect(throttled[0]!.details).toMatchObject({ count: 3 });
  });
});

// Wrong passwords from one address across many accounts (100 an hour), and the device cookies that keep the people
// behind that address signing in: device-cookie.test.ts.
