// Delivering one attempt of a delivery, recording it, and scheduling the next. Attempts run at 0, 1, 5, 15 and
// 60 minutes (each delay counted from the attempt before); after the fifth failure the delivery is failed and its
// webhook marked failing, and a later success clears that. Manual retries are single attempts after those five.
import type { Db } from '../../db.ts';
import { Prisma } from '../../db.ts';
import type { Clock } from '../../lib/clock.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { checkDestination, DEFAULT_WEBHOOK_SETTINGS, DestinationError, type WebhookSettings } from './destination.ts';
import { decryptSecret, signatureHeaders } from './secret.ts';
import { send, type SendResult } from './sender.ts';

/** Seconds to wait after attempt n (1-based) before attempt n+1. */
export const RETRY_DELAYS_SECONDS = [60, 4 * 60, 10 * 60, 45 * 60] as const;
export const SCHEDULED_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
export const DELIVER_TASK = 'webhook_deliver';

export interface DeliveryDeps {
  db: Db;
  clock: Clock;
  secretKey: Uint8Array;
  webhooks?: WebhookSettings;
}

export interface DeliverJob {
  deliveryId: string;
  attempt: number;
}

export function assertDeliverJob(payload: unknown): DeliverJob {
  const p = payload as Partial<DeliverJob> | null;
  if (!p || typeof p.deliveryId !== 'string' || !Number.isInteger(p.attempt) || p.attempt! < 1) {
    throw new Error(`${DELIVER_TASK}: expected {deliveryId, attempt}, got ${JSON.stringify(payload)}`);
  }
  return { deliveryId: p.deliveryId, attempt: p.attempt! };
}

/** The job of attempt `attempt` of a delivery, in its webhook's lane, keyed so the sweep can move it; null runs it now. */
export const deliverJobSql = (deliveryId: Prisma.Sql | string, webhookId: Prisma.Sql | string, attempt: Prisma.Sql | number, runAt: Date | null) => Prisma.sql`
  graphile_worker.add_job(${DELIVER_TASK}::text, json_build_object('deliveryId', (${deliveryId})::text, 'attempt', (${attempt})::int),
    queue_name => tessera_webhook_lane((${webhookId})::text, (${deliveryId})::text), run_at => ${runAt?.toISOString() ?? null}::timestamptz,
    job_key => 'webhook_delivery:' || (${deliveryId})::text)`;

export type AttemptOutcome = 'skipped' | 'delivered' | 'retrying' | 'failed';

export async function attemptDelivery(deps: DeliveryDeps, job: DeliverJob): Promise<AttemptOutcome> {
  const settings = deps.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;
  const delivery = await deps.db.webhookDelivery.findUnique({
    where: { id: job.deliveryId },
    select: {
      id: true, status: true, attempts: true, kind: true,
      webhook: { select: { id: true, url: true, isActive: true, secretEncrypted: true } },
      event: { select: { id: true, body: true } },
    },
  });
  // Already done (a job run twice), gone with its webhook, or paused: an inactive webhook gets nothing, and its
  // pending deliveries resume through the sweep once it is active again.
  if (!delivery || delivery.status !== 'pending' || delivery.attempts >= job.attempt || !delivery.webhook.isActive) return 'skipped';

  const secret = await decryptSecret(delivery.webhook.secretEncrypted, deps.secretKey);
  const startedAt = deps.clock.now();
  const body = delivery.event.body!;
  const headers = signatureHeaders(secret, { eventId: delivery.event.id, deliveryId: delivery.id, kind: delivery.kind, body, timestamp: startedAt });
  let result: SendResult;
  try {
    const destination = await checkDestination(delivery.webhook.url, settings);
    result = await send(destination, headers, body, { timeoutMs: settings.timeoutMs, ca: settings.ca });
  } catch (error) {
    if (!(error instanceof DestinationError)) throw error;
    result = { statusCode: null, headers: null, body: null, error: `refused: the URL ${error.message}`, durationMs: 0 };
  }

  const success = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  const delay = RETRY_DELAYS_SECONDS[job.attempt - 1];
  const next = !success && delay !== undefined ? new Date(startedAt.getTime() + delay * 1000) : null;
  const status = success ? 'delivered' : next ? 'pending' : 'failed';
  const exhausted = status === 'failed' && job.attempt >= SCHEDULED_ATTEMPTS;
  const now = deps.clock.now();
  // One statement: the delivery moves on only from the state this attempt started in (a duplicate run of the job
  // records nothing), with its attempt record, the webhook's failing mark, and the next attempt's job.
  await deps.db.$queryRaw`
    with d as (
      update webhook_deliveries set attempts = ${job.attempt}::int, status = ${status}::text, next_attempt_at = ${next}::timestamp(3),
        last_status_code = ${result.statusCode}::int, updated_at = ${now}::timestamp(3),
        delivered_at = case when ${success}::boolean then ${now}::timestamp(3) else delivered_at end
      where id = ${delivery.id}::text and attempts = ${job.attempt - 1}::int and status = 'pending'
      returning id, webhook_id
    ), logged as (
      insert into webhook_attempts (id, delivery_id, attempt, started_at, duration_ms, success, status_code, error, request_headers, response_headers, response_body)
      select ${uuidv7()}::text, d.id, ${job.attempt}::int, ${startedAt}::timestamp(3), ${result.durationMs}::int, ${success}::boolean,
             ${result.statusCode}::int, ${result.error}::text, ${JSON.stringify(headers)}::jsonb, ${result.headers ? JSON.stringify(result.headers) : null}::jsonb,
             ${result.body}::text
      from d
    ), marked as (
      update webhooks set failing_since = case when ${success}::boolean then null else coalesce(failing_since, ${now}::timestamp(3)) end
      where id = (select webhook_id from d) and (${success}::boolean or ${exhausted}::boolean)
    )
    select d.id, case when ${next !== null}::boolean then (${deliverJobSql(Prisma.sql`d.id`, Prisma.sql`d.webhook_id`, job.attempt + 1, next ?? now)}).id end as job
    from d`;
  return status === 'delivered' ? 'delivered' : status === 'pending' ? 'retrying' : 'failed';
}

/** How long a running attempt may hold its job before the sweep assumes its worker died and runs it again. */
const STUCK_AFTER_SECONDS = 120;

/**
 * Runs every due attempt now, by the service clock: a pending delivery of an active webhook whose next attempt is
 * due and whose job is not running (or has been running far past any time-out: its worker was killed) gets its job
 * moved to now, or made again. Keeps retries on the service clock, and resumes deliveries after a webhook is
 * re-activated or a worker died mid-attempt. Returns how many it moved.
 */
export async function sweepDueDeliveries(deps: Pick<DeliveryDeps, 'db' | 'clock'>): Promise<number> {
  const now = deps.clock.now();
  const rows = await deps.db.$queryRaw<{ id: string }[]>`
    select d.id, (${deliverJobSql(Prisma.sql`d.id`, Prisma.sql`d.webhook_id`, Prisma.sql`d.attempts + 1`, null)}).id as job
    from webhook_deliveries d join webhooks w on w.id = d.webhook_id and w.is_active
    where d.status = 'pending' and d.next_attempt_at <= ${now}::timestamp(3)
      and not exists (select 1 from graphile_worker.jobs j where j.key = 'webhook_delivery:' || d.id
                        and j.locked_at > now() - make_interval(secs => ${STUCK_AFTER_SECONDS}::int))
    limit 1000`;
  return rows.length;
}
