// Retry now: POST /api/v1/webhooks/deliveries/{deliveryId}/retry and POST /api/v1/webhooks/{id}/deliveries/{deliveryId}/retry
// try a delivery whose last attempt failed again at once, while later attempts are still scheduled. The service runs
// its worker and delivers to a real HTTPS receiver (a CA made here, trusted through WEBHOOK_CA_FILE); the retry
// schedule runs on a movable clock, and the graphile-worker job of a delivery (key webhook_delivery:<id>) is read
// from the queue itself.
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { MINUTE, movableClock } from '../helpers/clock.ts';
import { waitFor } from '../helpers/wait.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { sweepDueDeliveries } from '../../schema/modules/webhooks/delivery.service.ts';

const clock = movableClock();
/** How the receiver answers at each path: a status, or 'hold' (kept in `held` until the test answers it). */
const answers = new Map<string, number | 'hold'>();
const held: ServerResponse[] = [];

let ca: TestCa;
let receiver: HttpsReceiver;
let server: TestServer;
let platform: Client;
let other: Tenant;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startHttpsReceiver(ca, (req, res) => {
    const answer = answers.get(req.path) ?? 200;
    if (answer === 'hold') return void held.push(res);
    res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer === 200 ? 'ok' : 'down '.repeat(2000));
  });
  server = await startTestServer({
    role: 'all',
    clock,
    env: { WEBHOOK_CA_FILE: ca.caFile, WEBHOOK_TIMEOUT_MS: '20000' },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  other = await createTenant(server.url, platform);
});
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
  ca?.remove();
});

const retry = (as: Client, deliveryId: string) => as.post(`/api/v1/webhooks/deliveries/${deliveryId}/retry`);
const retryOf = (as: Client, webhookId: string, deliveryId: string) =>
  as.post(`/api/v1/webhooks/${webhookId}/deliveries/${deliveryId}/retry`);

/**
 * A fresh organization (so that each test sees only its own events) with a webhook to the receiver at `path`, and an
 * event for it; its delivery once the first attempt is recorded.
 */
async function deliveryTo(path: string, firstAnswer: number) {
  answers.set(path, firstAnswer);
  const org = await createTenant(server.url, platform);
  const admin = org.admin.api;
  const hook = await admin.post('/api/v1/webhooks', {
    url: receiver.url('receiver.test', path),
    events: ['api_key.created'],
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  expect((await admin.post('/api/v1/api-keys', { name: `for ${path}` })).status).toBe(201);
  const delivery = await attemptedBy(admin, hook.body.id, 1);
  return { org, webhookId: hook.body.id as string, delivery };
}

/** The webhook's (only) delivery once `n` attempts are recorded. */
const attemptedBy = (admin: Client, webhookId: string, n: number) =>
  waitFor(async () => {
    const [d] = (await admin.get(`/api/v1/webhooks/${webhookId}/deliveries`)).body.deliveries;
    return d && d.attemptCount >= n ? d : undefined;
  });

const requestsTo = (path: string) => receiver.received.filter((r) => r.path === path);

interface QueuedJob {
  run_at: Date;
  payload: { deliveryId: string; attempt: number };
  locked: boolean;
}
/** The delivery's jobs in graphile-worker's queue, by their key (its own table: the public view shows no payload). */
const jobsOf = (deliveryId: string) => server.base.db.$queryRaw<QueuedJob[]>`
  select run_at, payload, locked_at is not null as locked from graphile_worker._private_jobs where key = ${`webhook_delivery:${deliveryId}`}`;
/** Waits until the queue holds no job for the delivery (a finished job is deleted). */
const noJobLeft = (deliveryId: string) =>
  waitFor(async () => ((await jobsOf(deliveryId)).length === 0 ? true : undefined));

describe('Retry now', () => {
  it('retries a delivery whose first attempt failed at once: it is delivered, the attempt recorded, and the schedule ends', async () => {
    // given a delivery whose first attempt failed, with its second scheduled a minute later
    const { org, webhookId, delivery } = await deliveryTo('/flaky', 500);
    expect(delivery).toMatchObject({ status: 'pending', attemptCount: 1, statusCode: 500 });
    const [scheduled] = await jobsOf(delivery.id);
    expect(scheduled).toMatchObject({ payload: { deliveryId: delivery.id, attempt: 2 }, locked: false });
    expect(scheduled!.run_at.getTime()).toBe(new Date(delivery.nextAttemptAt).getTime());
    expect(new Date(delivery.nextAttemptAt).getTime() - new Date(delivery.attempts[0].timestamp).getTime()).toBe(
      MINUTE * 1000,
    );

    // when the receiver is fixed and the delivery is retried now
    answers.set('/flaky', 200);
    const retried = await retry(org.admin.api, delivery.id);

    // then the retry is accepted, and the attempt is made at once (long before its scheduled minute) and recorded
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);
    expect(retried.body).toMatchObject({ id: delivery.id, webhookId, status: 'pending', attemptCount: 1 });
    const done = await waitFor(async () => {
      const d = await attemptedBy(org.admin.api, webhookId, 2);
      return d.status === 'delivered' ? d : undefined;
    });
    expect(done).toMatchObject({
      status: 'delivered',
      attemptCount: 2,
      statusCode: 200,
      nextAttemptAt: null,
      deliveredAt: expect.any(String),
    });
    expect(done.attempts[0]).toMatchObject({ attempt: 1, manual: false, success: false, statusCode: 500 });
    expect(done.attempts[1]).toMatchObject({
      attempt: 2,
      manual: true,
      success: true,
      statusCode: 200,
      error: null,
      durationMs: expect.any(Number),
      timestamp: expect.any(String),
      request: {
        headers: expect.objectContaining({
          'x-service-delivery': delivery.id,
          'webhook-id': done.attempts[0].request.headers['webhook-id'],
        }),
      },
      response: { headers: expect.objectContaining({ 'content-type': 'text/plain' }), body: 'ok' },
    });
    // the first answer was long: it is kept truncated, like any attempt's
    expect(done.attempts[0].response.body).toHaveLength(4096);
    const sent = requestsTo('/flaky');
    expect(sent).toHaveLength(2);
    expect(sent[1]!.body).toBe(sent[0]!.body);

    // and the queue holds no job for it: the scheduled attempt was the job moved to now, and nothing follows a success
    await noJobLeft(delivery.id);

    // and a stale job of the schedule, run anyway (the attempt that would have come next), records and sends nothing
    const [again] = await server.base.db.$queryRaw<{ id: string }[]>`
      select (graphile_worker.add_job('webhook_deliver', json_build_object('deliveryId', ${delivery.id}::text, 'attempt', 3),
        job_key => ${`webhook_delivery:${delivery.id}`}::text)).id::text`;
    expect(again!.id).toEqual(expect.any(String));
    await noJobLeft(delivery.id);
    clock.advance(MINUTE);
    expect(await sweepDueDeliveries({ db: server.base.db, clock })).toBe(0);
    expect(requestsTo('/flaky')).toHaveLength(2);
    expect(await attemptedBy(org.admin.api, webhookId, 2)).toMatchObject({ status: 'delivered', attemptCount: 2 });

    // and a delivered delivery has nothing to retry, on either path
    for (const reply of [
      await retry(org.admin.api, delivery.id),
      await retryOf(org.admin.api, webhookId, delivery.id),
    ]) {
      expect(reply.status, JSON.stringify(reply.body)).toBe(409);
      expect(reply.body).toEqual({
        error: 'conflict',
        error_description: 'The delivery was delivered: there is nothing to retry',
      });
    }
    expect(await jobsOf(delivery.id)).toEqual([]);
  });

  it('keeps the schedule when the manual attempt fails too: the scheduled attempts come at their times, five of them', async () => {
    // given a delivery whose first attempt failed
    const { org, webhookId, delivery } = await deliveryTo('/fail/kept', 500);
    const due = new Date(delivery.nextAttemptAt).getTime();

    // when it is retried now, through the webhook's path, and the receiver still fails
    const retried = await retryOf(org.admin.api, webhookId, delivery.id);
    expect(retried.status, JSON.stringify(retried.body)).toBe(202);

    // then the manual attempt is recorded, and the second scheduled attempt is still due when it was, as the job
    // that follows it
    let d = await attemptedBy(org.admin.api, webhookId, 2);
    expect(d).toMatchObject({ status: 'pending', attemptCount: 2, statusCode: 500 });
    expect(d.attempts[1]).toMatchObject({ attempt: 2, manual: true, success: false, statusCode: 500 });
    expect(new Date(d.nextAttemptAt).getTime()).toBe(due);
    const [next] = await waitFor(async () => {
      const jobs = await jobsOf(delivery.id);
      return jobs.length === 1 && jobs[0]!.payload.attempt === 3 ? jobs : undefined;
    });
    expect(next!.run_at.getTime()).toBe(due);
    expect((await org.admin.api.get(`/api/v1/webhooks/${webhookId}`)).body).toMatchObject({ failing: false });

    // and the four scheduled attempts left come at 1, 5, 15 and 60 minutes, after which the delivery is failed
    for (const [n, delay] of [
      [3, 1],
      [4, 4],
      [5, 10],
      [6, 45],
    ] as const) {
      clock.advance(delay * MINUTE);
      expect(await sweepDueDeliveries({ db: server.base.db, clock })).toBe(1);
      d = await attemptedBy(org.admin.api, webhookId, n);
    }
    d = await waitFor(async () => {
      const got = await attemptedBy(org.admin.api, webhookId, 6);
      return got.status === 'failed' ? got : undefined;
    });
    expect(d).toMatchObject({ status: 'failed', attemptCount: 6, nextAttemptAt: null });
    expect(d.attempts.map((a: any) => a.manual)).toEqual([false, true, false, false, false, false]);
    const scheduledAt = d.attempts
      .filter((a: any) => !a.manual)
      .map((a: any) =>
        Math.round((new Date(a.timestamp).getTime() - new Date(d.attempts[0].timestamp).getTime()) / 60_000),
      );
    expect(scheduledAt).toEqual([0, 1, 5, 15, 60]);
    expect((await org.admin.api.get(`/api/v1/webhooks/${webhookId}`)).body).toMatchObject({ failing: true });

    // and a failed delivery is retried now too: one more attempt, which leaves it failed when it fails, with no job
    expect((await retry(org.admin.api, delivery.id)).status).toBe(202);
    d = await waitFor(async () => {
      const got = await attemptedBy(org.admin.api, webhookId, 7);
      return got.status === 'failed' ? got : undefined;
    });
    expect(d).toMatchObject({ attemptCount: 7, nextAttemptAt: null });
    expect(d.attempts[6]).toMatchObject({ attempt: 7, manual: true, success: false });
    await noJobLeft(delivery.id);
    expect(requestsTo('/fail/kept')).toHaveLength(7);
  });

  it('makes one attempt for 20 retries at once, and refuses retries while that attempt is being made', async () => {
    // given a delivery whose first attempt failed, and a receiver that will hold the next request
    const { org, webhookId, delivery } = await deliveryTo('/held', 500);
    answers.set('/held', 'hold');

    // when 20 retries arrive at once
    const replies = await Promise.all(Array.from({ length: 20 }, () => retry(org.admin.api, delivery.id)));

    // then one is accepted and the other 19 are refused: the retry is already on its way
    expect(replies.map((r) => r.status).sort()).toEqual([202, ...Array<number>(19).fill(409)]);
    for (const reply of replies.filter((r) => r.status === 409)) {
      expect(reply.body.error_description).toMatch(
        /^(A retry of this delivery is already on its way|An attempt of this delivery is being made: retry once it has ended)$/,
      );
    }

    // and the receiver gets one request, whose attempt is running (its job locked)
    await waitFor(() => (held.length === 1 ? true : undefined));
    await waitFor(async () => ((await jobsOf(delivery.id))[0]?.locked ? true : undefined));

    // when 20 more retries arrive while it is running, then all are refused
    const during = await Promise.all(Array.from({ length: 20 }, () => retryOf(org.admin.api, webhookId, delivery.id)));
    expect(during.map((r) => r.status)).toEqual(Array<number>(20).fill(409));

    // when the receiver answers (it fails), then exactly one attempt was made and recorded, and the schedule is kept
    held.pop()!.writeHead(500).end('still down');
    const d = await attemptedBy(org.admin.api, webhookId, 2);
    expect(d).toMatchObject({ status: 'pending', attemptCount: 2, nextAttemptAt: delivery.nextAttemptAt });
    expect(d.attempts.map((a: any) => [a.attempt, a.manual])).toEqual([
      [1, false],
      [2, true],
    ]);
    const [next] = await waitFor(async () => {
      const jobs = await jobsOf(delivery.id);
      return jobs.length === 1 && jobs[0]!.payload.attempt === 3 && !jobs[0]!.locked ? jobs : undefined;
    });
    expect(next!.run_at.getTime()).toBe(new Date(delivery.nextAttemptAt).getTime());
    expect(requestsTo('/held')).toHaveLength(2);
    expect(held).toHaveLength(0);

    // when the scheduled attempt comes and is being made, then a retry is refused: it would double it
    clock.advance(MINUTE);
    expect(await sweepDueDeliveries({ db: server.base.db, clock })).toBe(1);
    await waitFor(() => (held.length === 1 ? true : undefined));
    await waitFor(async () => ((await jobsOf(delivery.id))[0]?.locked ? true : undefined));
    const running = await retry(org.admin.api, delivery.id);
    expect(running.status).toBe(409);
    expect(running.body.error_description).toBe('An attempt of this delivery is being made: retry once it has ended');
    held.pop()!.writeHead(503).end('still down');
    expect(await attemptedBy(org.admin.api, webhookId, 3)).toMatchObject({
      status: 'pending',
      attemptCount: 3,
      statusCode: 503,
    });

    // and once that attempt is recorded, Retry now may be asked for again
    answers.set('/held', 200);
    expect((await retry(org.admin.api, delivery.id)).status).toBe(202);
    const done = await waitFor(async () => {
      const got = await attemptedBy(org.admin.api, webhookId, 4);
      return got.status === 'delivered' ? got : undefined;
    });
    expect(done.attempts.map((a: any) => [a.attempt, a.manual, a.statusCode])).toEqual([
      [1, false, 500],
      [2, true, 500],
      [3, false, 503],
      [4, true, 200],
    ]);
    expect(requestsTo('/held')).toHaveLength(4);
    await noJobLeft(delivery.id);
  });

  it("is not found for another tenant, another webhook's path, or an unknown id, and refused to members", async () => {
    // given a failed-once delivery of the tenant, and another webhook of the tenant
    const { org, webhookId, delivery } = await deliveryTo('/fail/tenancy', 500);
    const another = await org.admin.api.post('/api/v1/webhooks', {
      url: receiver.url('receiver.test', '/another'),
      events: ['user.created'],
    });
    expect(another.status).toBe(201);
    const theirs = await other.admin.api.post('/api/v1/webhooks', {
      url: receiver.url('receiver.test', '/theirs'),
      events: ['user.created'],
    });
    expect(theirs.status).toBe(201);

    // then
    for (const [what, reply] of [
      ['another tenant, old path', await retry(other.admin.api, delivery.id)],
      ['another tenant, webhook path', await retryOf(other.admin.api, webhookId, delivery.id)],
      ['another tenant through its own webhook', await retryOf(other.admin.api, theirs.body.id, delivery.id)],
      ["another webhook's path", await retryOf(org.admin.api, another.body.id, delivery.id)],
      ['an unknown delivery', await retryOf(org.admin.api, webhookId, 'no-such-delivery')],
      ['an unknown webhook', await retryOf(org.admin.api, 'no-such-webhook', delivery.id)],
    ] as const) {
      expect(reply.status, `${what}: ${JSON.stringify(reply.body)}`).toBe(404);
    }
    expect((await retryOf(org.member.api, webhookId, delivery.id)).status).toBe(403);
    // a field in the body is refused, as on every route that takes none
    expect(
      (await org.admin.api.post(`/api/v1/webhooks/${webhookId}/deliveries/${delivery.id}/retry`, { now: true })).status,
    ).toBe(400);

    // and an inactive webhook's delivery is not retried
    expect((await org.admin.api.patch(`/api/v1/webhooks/${webhookId}`, { isActive: false })).status).toBe(200);
    const paused = await retryOf(org.admin.api, webhookId, delivery.id);
    expect(paused.status).toBe(409);
    expect(paused.body.error_description).toBe('The webhook is inactive: activate it to retry');

    // and nothing was attempted again through any of these
    expect(requestsTo('/fail/tenancy')).toHaveLength(1);
    expect((await attemptedBy(org.admin.api, webhookId, 1)).attemptCount).toBe(1);
  });
});
