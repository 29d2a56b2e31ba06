// The worker announces each session that reached its end of life still signed in (session.expired, list A), once,
// through the real job queue with a movable clock. A session signed out, or ended by a new password, was over
// before it expired: it is not announced.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { addPerson, PASSWORD } from '../helpers/fixtures.ts';
import { DAY, movableClock } from '../helpers/clock.ts';
import { runTaskNow } from '../helpers/worker.ts';
import { sha256 } from '../../schema/lib/crypto.ts';

const clock = movableClock();
let server: TestServer;
let admin: Client;
let orgId: string;

beforeAll(async () => {
  server = await startTestServer({ clock, role: 'all' });
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  orgId = (await admin.get('/api/v1/orgs')).body[0].id;
});
afterAll(() => server?.stop());

const sessionId = async (token: string) =>
  (await server.base.db.session.findUniqueOrThrow({ where: { tokenHash: sha256(token) } })).id;

/** The session.expired events per session id, with each event's organization. */
async function announced(): Promise<Map<string, { organizationId: string; data: unknown }[]>> {
  const rows = await server.base.db.event.findMany({ where: { kind: 'session.expired' } });
  const bySession = new Map<string, { organizationId: string; data: unknown }[]>();
  for (const row of rows) {
    const data = (JSON.parse(row.body) as { data: { session: { id: string } } }).data;
    bySession.set(data.session.id, [
      ...(bySession.get(data.session.id) ?? []),
      { organizationId: row.organizationId!, data },
    ]);
  }
  return bySession;
}

describe('the expire_sessions task', () => {
  it('announces a session that ran out while signed in exactly once, and none that was signed out or ended by a new password', async () => {
    const live = await signIn(server.url, ADMIN.email, ADMIN.password);
    const signedOut = await signIn(server.url, ADMIN.email, ADMIN.password);
    expect((await signedOut.api.post('/api/v1/auth/logout')).status).toBe(204);
    // A member who changes the password: the sessions from before end at once, the new one lives on.
    const member = await addPerson(server.url, admin, orgId, 'member');
    const changed = await member.api.patch('/api/v1/users/me', {
      current_password: PASSWORD,
      password: 'another long password',
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    const renewedToken = changed.body.token as string;
    expect(renewedToken).toEqual(expect.any(String));
    const ids = {
      live: await sessionId(live.login.token),
      signedOut: await sessionId(signedOut.login.token),
      replaced: await sessionId(member.token),
      renewed: await sessionId(renewedToken),
    };

    // Not yet expired: the run finishes and announces none of them.
    await runTaskNow(server.databaseUrl, 'expire_sessions');
    let seen = await announced();
    expect(Object.values(ids).filter((id) => seen.has(id))).toEqual([]);

    clock.advance(7 * DAY + 60);
    await runTaskNow(server.databaseUrl, 'expire_sessions');
    seen = await announced();
    expect(seen.has(ids.signedOut)).toBe(false);
    expect(seen.has(ids.replaced)).toBe(false);
    // One event per organization the user belongs to, with the session as the catalog shows it.
    const session = await server.base.db.session.findUniqueOrThrow({ where: { id: ids.live } });
    expect(seen.get(ids.live)?.map((e) => e.data)).toContainEqual({
      session: {
        id: ids.live,
        userId: session.userId,
        createdAt: session.createdAt.toISOString(),
        expiresAt: session.expiresAt.toISOString(),
      },
    });
    expect(seen.get(ids.renewed)).toEqual([expect.objectContaining({ organizationId: orgId })]);

    // A second run after the first has finished announces nothing new.
    await runTaskNow(server.databaseUrl, 'expire_sessions');
    const again = await announced();
    expect(again.get(ids.live)).toHaveLength(seen.get(ids.live)!.length);
    expect(again.get(ids.renewed)).toHaveLength(1);
    clock.reset();
  });
});
