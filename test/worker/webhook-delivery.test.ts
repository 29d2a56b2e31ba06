// Webhook delivery through the real job queue to a real HTTPS receiver (a CA made here, trusted through
// WEBHOOK_CA_FILE): the signatures (checked by the standardwebhooks package and by hand), the same body bytes on
// every attempt, the retry schedule on a movable clock, the failing mark, manual retry, test events, secret
// rotation, inactive webhooks, a hanging receiver that delays no one else, and nothing sent for a rolled-back change.
import { createHmac } from 'node:crypto';
import pg from 'pg';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { MINUTE, movableClock } from '../helpers/clock.ts';
import { waitFor } from '../helpers/wait.ts';
import {
  makeTestCa,
  startHttpsReceiver,
  type HttpsReceiver,
  type Received,
  type TestCa,
} from '../helpers/https-receiver.ts';
import { emitEvent } from '../../schema/events/emit.ts';
import { sweepDueDeliveries } from '../../schema/modules/webhooks/delivery.service.ts';

const clock = movableClock();
const TIMEOUT_MS = 8000;
let ca: TestCa;
let receiver: HttpsReceiver;
let server: TestServer;
let admin: Client;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startHttpsReceiver(ca, (req, res) => {
    if (req.path.startsWith('/hang')) return;
    const status = req.path.startsWith('/fail') ? 500 : 200;
    res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'x'.repeat(10_000));
  });
  server = await startTestServer({
    role: 'all',
    clock,
    env: { WEBHOOK_CA_FILE: ca.caFile, WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
});
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
  ca?.remove();
});

/** A fresh organization (the platform admin owns it), so that each test sees only its own events. */
async function organization(): Promise<{ id: string; name: string }> {
  const name = `Hooks ${Math.random().toString(36).slice(2, 8)}`;
  const created = await admin.post('/v1/organizations', { name });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { id: created.body.id, name };
}

async function webhook(orgId: string, path: string, events = ['api_key.created'], host = 'receiver.test') {
  const created = await admin.post('/api/v1/webhooks', {
    url: receiver.url(host, path),
    events,
    organizationId: orgId,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body as { id: string; secret: string; url: string };
}

/** An operation of the organization that emits api_key.created. */
async function createKey(orgId: string, name = 'evented') {
  const key = await admin.post('/api/v1/api-keys', { name, organization_id: orgId });
  expect(key.status).toBe(201);
  return key.body.id as string;
}

const receivedAt = (path: string, count = 1) =>
  waitFor(() => {
    const got = receiver.received.filter((r) => r.path === path);
    return got.length >= count ? got : undefined;
  });

const deliveries = async (webhookId: string) =>
  (await admin.get(`/api/v1/webhooks/${webhookId}/deliveries`)).body.deliveries as any[];

function verifyByHand(secret: string, request: Received) {
  const expected = createHmac('sha256', secret).update(request.body).digest('hex');
  return request.headers['x-service-signature'] === `sha256=${expected}`;
}

describe('webhook delivery', () => {
  it('POSTs the envelope, signed with X-Service-Signature and the Standard Webhooks headers', async () => {
    const org = await organization();
    const hook = await webhook(org.id, '/signed');
    const keyId = await createKey(org.id);
    const [request] = await receivedAt('/signed');
    const body = JSON.parse(request!.body);
    expect(body).toEqual({
      id: expect.any(String),
      event: 'api_key.created',
      timestamp: expect.any(String),
      organization: org,
      data: { apiKey: { id: keyId, name: 'evented', role: 'admin' } },
    });
    expect(new Date(body.timestamp).toISOString()).toBe(body.timestamp);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['x-service-event']).toBe('api_key.created');
    expect(verifyByHand(hook.secret, request!)).toBe(true);
    // The independent verifier: it also checks the timestamp is recent (replays are refused).
    expect(new StandardWebhook(hook.secret).verify(request!.body, request!.headers as Record<string, string>)).toEqual(
      body,
    );
    expect(request!.headers['webhook-id']).toBe(body.id);
    expect(() =>
      new StandardWebhook(hook.secret).verify(
        request!.body.replace('evented', 'tampered'),
        request!.headers as Record<string, string>,
      ),
    ).toThrow();
    // The stored body is the exact text sent, and X-Service-Delivery names the delivery record.
    const event = await server.base.db.event.findUniqueOrThrow({ where: { id: body.id } });
    expect(event.body).toBe(request!.body);
    const [delivery] = await waitFor(async () => {
      const list = await deliveries(hook.id);
      return list[0]?.status === 'delivered' ? list : undefined;
    });
    expect(request!.headers['x-service-delivery']).toBe(delivery.id);
    expect(delivery).toMatchObject({
      event: 'api_key.created',
      attemptCount: 1,
      statusCode: 200,
      request: { body: request!.body },
    });
    expect(delivery.attempts[0]).toMatchObject({
      attempt: 1,
      success: true,
      statusCode: 200,
      response: { body: 'ok' },
    });
    expect(delivery.attempts[0].request.headers['x-service-signature']).toBe(request!.headers['x-service-signature']);
  });

  it('writes the event, its deliveries and their jobs in the caller transaction: a rollback leaves none', async () => {
    const org = await organization();
    const hook = await webhook(org.id, '/rollback');
    const db = server.base.db;
    let seen: { deliveries: number; jobs: number } | undefined;
    await expect(
      db.$transaction(async (tx) => {
        const eventId = await emitEvent(tx, 'api_key.created', org, {
          apiKey: { id: 'k', name: 'rolled back', role: 'member' },
        });
        const rows = await tx.webhookDelivery.findMany({ where: { eventId } });
        const jobs = await tx.$queryRaw<
          { n: number }[]
        >`select count(*)::int as n from graphile_worker.jobs where key = ${`webhook_delivery:${rows[0]?.id}`}`;
        seen = { deliveries: rows.length, jobs: jobs[0]!.n };
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(seen).toEqual({ deliveries: 1, jobs: 1 });
    expect(await db.webhookDelivery.count({ where: { webhookId: hook.id } })).toBe(0);
    expect(await db.event.count({ where: { organizationId: org.id, kind: 'api_key.created' } })).toBe(0);
    const jobs = await db.$queryRaw<
      { n: number }[]
    >`select count(*)::int as n from graphile_worker.jobs where key like 'webhook_delivery:%' and substr(key, 18) not in (select id from webhook_deliveries)`;
    expect(jobs[0]!.n).toBe(0);
  });

  it('retries at 1, 5, 15 and 60 minutes with the same body, then marks the webhook failing until a success', async () => {
    const org = await organization();
    const hook = await webhook(org.id, '/fail/schedule');
    await createKey(org.id);
    const attempts = async (n: number) =>
      waitFor(async () => {
        const [d] = await deliveries(hook.id);
        return d && d.attemptCount >= n ? d : undefined;
      });
    let delivery = await attempts(1);
    expect(delivery).toMatchObject({ status: 'pending', statusCode: 500 });
    expect(delivery.attempts[0].response.body).toHaveLength(4096);
    // The next attempt is a job at the scheduled time.
    const [job] = await server.base.db.$queryRaw<
      { run_at: Date }[]
    >`select run_at from graphile_worker.jobs where key = ${`webhook_delivery:${delivery.id}`}`;
    expect(job!.run_at.getTime()).toBe(new Date(delivery.nextAttemptAt).getTime());
    for (const [n, delay] of [
      [2, 1],
      [3, 4],
      [4, 10],
      [5, 45],
    ] as const) {
      clock.advance(delay * MINUTE - 2);
      expect(await sweepDueDeliveries({ db: server.base.db, clock })).toBe(0); // not due yet
      clock.advance(2);
      expect(await sweepDueDeliveries({ db: server.base.db, clock })).toBe(1);
      delivery = await attempts(n);
    }
    expect(delivery).toMatchObject({ status: 'failed', attemptCount: 5, nextAttemptAt: null });
    const starts = delivery.attempts.map(
      (a: any) => new Date(a.timestamp).getTime() - new Date(delivery.attempts[0].timestamp).getTime(),
    );
    const minutes = starts.map((ms: number) => Math.round(ms / 60_000));
    expect(minutes).toEqual([0, 1, 5, 15, 60]);
    const bodies = receiver.received.filter((r) => r.path === '/fail/schedule').map((r) => r.body);
    expect(bodies).toHaveLength(5);
    expect(new Set(bodies).size).toBe(1);
    expect((await admin.get(`/api/v1/webhooks/${hook.id}`)).body).toMatchObject({
      failing: true,
      failingSince: expect.any(String),
    });

    // A failed delivery is retried now: one more attempt (a second retry while it is on its way is refused), and its
    // success clears the mark.
    expect(
      (await admin.patch(`/api/v1/webhooks/${hook.id}`, { url: receiver.url('receiver.test', '/fixed') })).status,
    ).toBe(200);
    const retried = await admin.post(`/api/v1/webhooks/deliveries/${delivery.id}/retry`);
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    expect((await admin.post(`/api/v1/webhooks/deliveries/${delivery.id}/retry`)).status).toBe(409);
    const [fixed] = await receivedAt('/fixed');
    expect(fixed!.body).toBe(bodies[0]);
    delivery = await attempts(6);
    expect(delivery).toMatchObject({ status: 'delivered', statusCode: 200 });
    expect((await admin.get(`/api/v1/webhooks/${hook.id}`)).body).toMatchObject({ failing: false, failingSince: null });
  });

  it('does not let a hanging receiver delay deliveries to another', async () => {
    const org = await organization();
    const hanging = await webhook(org.id, '/hang/one');
    await webhook(org.id, '/quick');
    const started = Date.now();
    // Twenty events: more than the eight attempts of one webhook a worker runs at once, so the hanging webhook
    // fills its share of the worker's slots and still holds up no one else.
    for (let i = 0; i < 20; i++) await createKey(org.id, `key ${i}`);
    const quick = await receivedAt('/quick', 20);
    // All twenty reached the quick receiver well before the hanging one timed out even once.
    expect(Math.max(...quick.map((r) => r.at)) - started).toBeLessThan(TIMEOUT_MS);
    const timedOut = await waitFor(async () => {
      const list = await deliveries(hanging.id);
      return list.some((d) => d.attempts.length) ? list.find((d) => d.attempts.length) : undefined;
    });
    expect(timedOut.attempts[0]).toMatchObject({
      success: false,
      statusCode: null,
      error: `no answer within ${TIMEOUT_MS} ms`,
    });
  });

  it('sends a test event of a chosen kind, signs with a rotated secret at once, and sends nothing while inactive', async () => {
    const org = await organization();
    const hook = await webhook(org.id, '/test-event');
    const test = await admin.post(`/api/v1/webhooks/${hook.id}/test`, { event: 'subscription.created' });
    expect(test.status, JSON.stringify(test.body)).toBe(202);
    const [sent] = await receivedAt('/test-event');
    expect(sent!.headers['x-service-event']).toBe('subscription.created');
    expect(JSON.parse(sent!.body)).toMatchObject({
      event: 'subscription.created',
      organization: org,
      data: { test: true, subscription: expect.any(Object) },
    });
    expect(sent!.headers['x-service-delivery']).toBe(test.body.id);

    const rotated = await admin.post(`/api/v1/webhooks/${hook.id}/rotate-secret`);
    expect(rotated.body.secret).not.toBe(hook.secret);
    await admin.post(`/api/v1/webhooks/${hook.id}/test`, { event: 'user.created' });
    const [, second] = await receivedAt('/test-event', 2);
    expect(verifyByHand(rotated.body.secret, second!)).toBe(true);
    expect(verifyByHand(hook.secret, second!)).toBe(false);
    expect(() =>
      new StandardWebhook(hook.secret).verify(second!.body, second!.headers as Record<string, string>),
    ).toThrow();

    expect((await admin.patch(`/api/v1/webhooks/${hook.id}`, { isActive: false })).body.isActive).toBe(false);
    await createKey(org.id);
    // The fan-out happens in the change's own transaction: an inactive webhook got no delivery at all.
    const events = await server.base.db.event.findMany({
      where: { organizationId: org.id, kind: 'api_key.created' },
      include: { deliveries: true },
    });
    expect(events).toHaveLength(1);
    expect(events[0]!.deliveries).toEqual([]);
    expect((await admin.post(`/api/v1/webhooks/${hook.id}/test`, { event: 'user.created' })).status).toBe(409);
  });
});

describe('the job queue schema', () => {
  it('is installed by the migrations, so an API process can enqueue', async () => {
    const db = new pg.Client({ connectionString: server.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query(
        `select to_regprocedure('graphile_worker.add_jobs(graphile_worker.job_spec[], boolean)') is not null as ok`,
      );
      expect(rows[0].ok).toBe(true);
    } finally {
      await db.end();
    }
  });
});
