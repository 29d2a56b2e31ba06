// The expire_subscriptions task, through the real job queue with a movable clock: active and trial subscriptions
// past their end_date become expired, each with one subscription.updated event; nothing else moves.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { DAY, movableClock } from '../helpers/clock.ts';
import { waitFor } from '../helpers/wait.ts';

const clock = movableClock();
let server: TestServer;
let admin: Client;
let orgId: string;
let productId: string;

beforeAll(async () => {
  server = await startTestServer({ clock, role: 'all' });
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  orgId = (await admin.get('/api/v1/orgs')).body[0].id;
  productId = (await admin.post('/v1/products', { name: 'Expiring', slug: 'expiring', features: ['a'] })).body.id;
});
afterAll(() => server?.stop());

/** Enqueues the task as its cron schedule would, and waits until the worker has run it (the job row is gone). */
async function runSweep(): Promise<void> {
  const db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query('select id from graphile_worker.add_job($1)', ['expire_subscriptions']);
    await waitFor(async () =>
      (await db.query('select 1 from graphile_worker.jobs where id = $1', [rows[0].id])).rowCount === 0
        ? true
        : undefined,
    );
  } finally {
    await db.end();
  }
}

const inDays = (days: number) => new Date(clock.now().getTime() + days * DAY * 1000).toISOString();

async function subscription(status: string, endDate: string | null) {
  const reply = await admin.post('/v1/subscriptions', {
    organization_id: orgId,
    product_id: productId,
    total_seats: 1,
    price_per_seat: 1,
    billing_cycle: 'monthly',
    status,
    end_date: endDate,
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body.id as string;
}

const statusOf = async (id: string) => (await admin.get(`/v1/subscriptions/${id}`)).body.status;
const updates = async (id: string) =>
  (
    await server.base.db.event.findMany({
      where: { kind: 'subscription.updated', organizationId: orgId },
      orderBy: { id: 'asc' },
    })
  ).filter((e) => JSON.parse(e.body).data.subscription.id === id);

describe('the expire_subscriptions task', () => {
  it('expires active and trial subscriptions past end_date once, and leaves the others alone', async () => {
    const active = await subscription('active', inDays(2));
    const trial = await subscription('trial', inDays(2));
    const later = await subscription('active', inDays(30));
    const cancelled = await subscription('cancelled', inDays(1));
    const endless = await subscription('active', null);

    await runSweep();
    expect(await Promise.all([active, trial, later, cancelled, endless].map(statusOf))).toEqual([
      'active',
      'trial',
      'active',
      'cancelled',
      'active',
    ]);

    clock.advance(3 * DAY);
    await runSweep();
    expect(await Promise.all([active, trial, later, cancelled, endless].map(statusOf))).toEqual([
      'expired',
      'expired',
      'active',
      'cancelled',
      'active',
    ]);

    const [event] = await updates(active);
    expect(JSON.parse(event!.body)).toMatchObject({
      organization: { id: orgId, name: 'Operator' },
      data: {
        subscription: { id: active, status: 'expired' },
        changes: ['status'],
        previous_status: 'active',
        reason: 'end_date_passed',
      },
    });
    expect((await updates(trial)).map((e) => JSON.parse(e.body).data.previous_status)).toEqual(['trial']);
    expect(await updates(later)).toHaveLength(0);
    expect(await updates(cancelled)).toHaveLength(0);
    expect(
      await server.base.db.auditLog.count({
        where: { action: 'subscription.expire', targetId: { in: [active, trial] }, actorType: 'system' },
      }),
    ).toBe(2);

    await runSweep();
    expect(await updates(active)).toHaveLength(1);
    expect(await updates(trial)).toHaveLength(1);
  });
});
