// The worker announces each invitation that ran out, once (member.invitation.expired, list A).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { DAY, movableClock } from '../helpers/clock.ts';
import { runTaskNow } from '../helpers/worker.ts';

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

async function expiredEvents(invitationId: string) {
  const rows = await server.base.db.event.findMany({
    where: { kind: 'member.invitation.expired', organizationId: orgId },
  });
  return rows.filter(
    (e) => (JSON.parse(e.body) as { data: { invitation: { id: string } } }).data.invitation.id === invitationId,
  );
}

describe('the expire_invitations task', () => {
  it('announces an invitation that ran out exactly once, and leaves pending, accepted and revoked ones alone', async () => {
    const lapsing = await admin.post(`/v1/organizations/${orgId}/invitations`, {
      email: 'late@example.test',
      role: 'member',
    });
    const revoked = await admin.post(`/v1/organizations/${orgId}/invitations`, {
      email: 'revoked@example.test',
      role: 'member',
    });
    expect((await admin.delete(`/v1/organizations/${orgId}/invitations/${revoked.body.id}`)).status).toBe(204);

    // Not yet expired: the run finishes and announces nothing.
    await runTaskNow(server.databaseUrl, 'expire_invitations');
    expect(await expiredEvents(lapsing.body.id)).toHaveLength(0);

    clock.advance(7 * DAY + 60);
    await runTaskNow(server.databaseUrl, 'expire_invitations');
    const [event] = await expiredEvents(lapsing.body.id);
    expect((JSON.parse(event!.body) as { data: unknown }).data).toEqual({
      invitation: {
        id: lapsing.body.id,
        email: 'late@example.test',
        role: 'member',
        invitedBy: expect.any(String),
        expiresAt: lapsing.body.expires_at,
      },
    });
    expect(await expiredEvents(revoked.body.id)).toHaveLength(0);

    // A second run after the first has finished announces nothing new.
    await runTaskNow(server.databaseUrl, 'expire_invitations');
    expect(await expiredEvents(lapsing.body.id)).toHaveLength(1);
  });
});
