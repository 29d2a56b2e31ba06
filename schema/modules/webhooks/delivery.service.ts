// Webhook deliveries on the shared signed-attempt schedule (schema/push/signed-attempt.ts): each attempt is recorded in
// webhook_attempts; after the fifth failure the delivery is failed and its webhook marked failing, and a later
// success clears that. A manual attempt (Retry now, webhooks.service.ts) is one more, outside the schedule.
import { Prisma } from '../../db.ts';
import { uuidv7 } from '../../lib/ids.ts';
import {
  advanceSql,
  assertAttemptJob,
  attemptSigned,
  nextJobSql,
  outcomeOf,
  recordAttempt,
  SCHEDULED_ATTEMPTS,
  sqlOf,
  STUCK_AFTER_SECONDS,
  type AttemptDeps,
  type AttemptLane,
  type AttemptOutcome,
  type AttemptSlot,
} from '../../push/signed-attempt.ts';

// The job as the SQL function tessera_webhook_delivery_job defines it (docs/architecture.md#jobs), read back here.
export const DELIVER_TASK = 'webhook_deliver';
const lane: AttemptLane = { task: DELIVER_TASK, idKey: 'deliveryId', keyPrefix: 'webhook_delivery:' };

export const assertDeliverJob = (payload: unknown) => assertAttemptJob(lane, payload);

/**
 * Queues attempt `attempt` of a delivery, the job that tessera_webhook_delivery_job defines (the fan-out trigger
 * queues the first the same way); a null runAt runs it now. The queued job's row.
 */
export const deliverJobSql = (
  deliveryId: Prisma.Sql | string,
  webhookId: Prisma.Sql | string,
  attempt: Prisma.Sql | number,
  runAt: Date | null,
) => Prisma.sql`
  (select j from graphile_worker.add_jobs(array[tessera_webhook_delivery_job((${deliveryId})::text, (${webhookId})::text, (${attempt})::int,
    ${runAt?.toISOString() ?? null}::timestamptz)]) j)`;

interface DeliveryRow {
  id: string;
  status: string;
  attempts: number;
  kind: string;
  event_id: string;
  body: string;
  next_attempt_ms: number | null;
  manual: boolean;
  manual_before: number;
  webhook_id: string;
  url: string;
  is_active: boolean;
  secret_encrypted: string;
}

/**
 * The schedule's place of attempt `attempt`, or, for a manual one, when the scheduled attempt still to come is due.
 *
 * Retry now moves the delivery's one job (webhook_delivery:<id>) to now and sets retry_requested_at: the attempt that
 * job makes is manual. It takes the next number like any other (so advanceSql's `attempts = n - 1 and status =
 * 'pending'` still lets a job record only the state it started in, and a duplicate records nothing), but not the
 * schedule's next place: should it fail, next_attempt_at stays as it was and the next job is queued for then; should
 * it succeed, the delivery is delivered and no job is queued. The place of a scheduled attempt is its number less
 * the manual attempts before it. A retry of a failed delivery, whose schedule is spent, leaves it failed again.
 */
function slotOf(delivery: DeliveryRow, attempt: number): AttemptSlot {
  if (!delivery.manual) return { scheduled: attempt - delivery.manual_before };
  const scheduledMade = attempt - 1 - delivery.manual_before;
  return {
    manual: true,
    next:
      scheduledMade < SCHEDULED_ATTEMPTS && delivery.next_attempt_ms !== null
        ? new Date(delivery.next_attempt_ms)
        : null,
  };
}

export async function attemptDelivery(
  deps: AttemptDeps,
  job: { id: string; attempt: number },
): Promise<AttemptOutcome> {
  // One statement: the delivery, its webhook and its event's body.
  const sql = sqlOf(deps);
  const [delivery] = await sql<DeliveryRow>(Prisma.sql`
    select d.id, d.status, d.attempts, d.kind, d.event_id, e.body, d.retry_requested_at is not null as manual,
           -- As milliseconds: a plain pg client would read a timestamp without time zone in the process's zone.
           (extract(epoch from d.next_attempt_at) * 1000)::float8 as next_attempt_ms,
           (select count(*) from webhook_attempts a where a.delivery_id = d.id and a.manual)::int as manual_before,
           w.id as webhook_id, w.url, w.is_active, w.secret_encrypted
    from webhook_deliveries d join webhooks w on w.id = d.webhook_id join events e on e.id = d.event_id
    where d.id = ${job.id}::text`);
  // Already done (a job run twice), gone with its webhook, or paused: an inactive webhook gets nothing, and its
  // pending deliveries resume through the sweep once it is active again.
  if (!delivery || delivery.status !== 'pending' || delivery.attempts >= job.attempt || !delivery.is_active)
    return 'skipped';

  const sent = await attemptSigned(
    deps,
    job.attempt,
    {
      url: delivery.url,
      secretEncrypted: delivery.secret_encrypted,
      eventId: delivery.event_id,
      deliveryId: delivery.id,
      kind: delivery.kind,
      body: delivery.body,
    },
    slotOf(delivery, job.attempt),
  );
  const exhausted = sent.status === 'failed';
  // One statement: the delivery's step, its attempt record, the webhook's failing mark, and the next attempt's job.
  await recordAttempt(sent, ({ result }) =>
    sql(Prisma.sql`
    with d as (${advanceSql('webhook_deliveries', delivery.id, sent, Prisma.sql`, retry_requested_at = null`)} returning id, webhook_id),
    logged as (
      insert into webhook_attempts (id, delivery_id, attempt, started_at, duration_ms, success, status_code, error, request_headers, response_headers, response_body, manual)
      select ${uuidv7()}::text, d.id, ${job.attempt}::int, ${sent.startedAt}::timestamp(3), ${result.durationMs}::int, ${sent.success}::boolean,
             ${result.statusCode}::int, ${result.error}::text, ${JSON.stringify(sent.headers)}::jsonb, ${result.headers ? JSON.stringify(result.headers) : null}::jsonb,
             ${result.body}::text, ${delivery.manual}::boolean
      from d
    ), marked as (
      update webhooks set failing_since = case when ${sent.success}::boolean then null else coalesce(failing_since, ${sent.now}::timestamp(3)) end
      where id = (select webhook_id from d) and (${sent.success}::boolean or ${exhausted}::boolean)
    )
    select d.id, ${nextJobSql(sent, deliverJobSql(Prisma.sql`d.id`, Prisma.sql`d.webhook_id`, job.attempt + 1, sent.next))} as job
    from d`),
  );
  return outcomeOf(sent);
}

/**
 * Runs every due attempt now, by the service clock: a pending delivery of an active webhook whose next attempt is
 * due and whose job is not running (or has been running far past any time-out: its worker was killed) gets its job
 * moved to now, or made again. Keeps retries on the service clock, and resumes deliveries after a webhook is
 * re-activated or a worker died mid-attempt. Returns how many it moved.
 */
export async function sweepDueDeliveries(deps: Pick<AttemptDeps, 'db' | 'clock'>): Promise<number> {
  const now = deps.clock.now();
  const rows = await deps.db.$queryRaw<{ id: string }[]>`
    select d.id, (${deliverJobSql(Prisma.sql`d.id`, Prisma.sql`d.webhook_id`, Prisma.sql`d.attempts + 1`, null)}).id as job
    from webhook_deliveries d join webhooks w on w.id = d.webhook_id and w.is_active
    where d.status = 'pending' and d.next_attempt_at <= ${now}::timestamp(3)
      and not exists (select 1 from graphile_worker.jobs j where j.key = ${lane.keyPrefix}::text || d.id
                        and j.locked_at > now() - make_interval(secs => ${STUCK_AFTER_SECONDS}::int))
    limit 1000`;
  return rows.length;
}
