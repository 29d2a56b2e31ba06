// Notices to apps sent by the worker (app.uninstalled): signed like the install push with the app's current secret,
// attempted on the webhook retry schedule (0, 1, 5, 15, 60 minutes), the same body bytes every time. Also the
// sweep that finishes what a dead process left: due attempts not queued, and installs that never completed.
import type { Db } from '../../db.ts';
import { Prisma } from '../../db.ts';
import type { Clock } from '../../lib/clock.ts';
import { checkDestination, DEFAULT_WEBHOOK_SETTINGS, DestinationError, type WebhookSettings } from '../webhooks/destination.ts';
import { RETRY_DELAYS_SECONDS } from '../webhooks/delivery.service.ts';
import { decryptSecret, signatureHeaders } from '../webhooks/secret.ts';
import { send, type SendResult } from '../webhooks/sender.ts';

export const NOTIFY_TASK = 'app_notify';

export interface NotifyDeps {
  db: Db;
  clock: Clock;
  secretKey: Uint8Array;
  webhooks?: WebhookSettings;
}

export interface NotifyJob {
  notificationId: string;
  attempt: number;
}

export function assertNotifyJob(payload: unknown): NotifyJob {
  const p = payload as Partial<NotifyJob> | null;
  if (!p || typeof p.notificationId !== 'string' || !Number.isInteger(p.attempt) || p.attempt! < 1) {
    throw new Error(`${NOTIFY_TASK}: expected {notificationId, attempt}, got ${JSON.stringify(payload)}`);
  }
  return { notificationId: p.notificationId, attempt: p.attempt! };
}

/** The job of one attempt, one app's notices one at a time, keyed so the sweep can move it. */
export const notificationJobSql = (id: Prisma.Sql | string, appId: Prisma.Sql | string, attempt: Prisma.Sql | number, runAt: Date) => Prisma.sql`
  graphile_worker.add_job(${NOTIFY_TASK}::text, json_build_object('notificationId', (${id})::text, 'attempt', (${attempt})::int),
    queue_name => 'app:' || (${appId})::text, run_at => ${runAt.toISOString()}::timestamptz,
    job_key => 'app_notification:' || (${id})::text)`;

export async function attemptNotification(deps: NotifyDeps, job: NotifyJob): Promise<'skipped' | 'delivered' | 'retrying' | 'failed'> {
  const settings = deps.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;
  const notification = await deps.db.appNotification.findUnique({
    where: { id: job.notificationId },
    include: { app: { select: { id: true, webhookUrl: true, signingSecretEncrypted: true } } },
  });
  // Done already (a job run twice), or gone with its app.
  if (!notification || notification.status !== 'pending' || notification.attempts >= job.attempt) return 'skipped';

  const secret = await decryptSecret(notification.app.signingSecretEncrypted, deps.secretKey);
  const startedAt = deps.clock.now();
  const headers = signatureHeaders(secret, { eventId: notification.id, deliveryId: notification.id, kind: notification.kind, body: notification.body, timestamp: startedAt });
  let result: SendResult;
  try {
    result = await send(await checkDestination(notification.app.webhookUrl, settings), headers, notification.body, { timeoutMs: settings.timeoutMs, ca: settings.ca });
  } catch (error) {
    if (!(error instanceof DestinationError)) throw error;
    result = { statusCode: null, headers: null, body: null, error: `refused: the URL ${error.message}`, durationMs: 0 };
  }
  const success = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  const delay = RETRY_DELAYS_SECONDS[job.attempt - 1];
  const next = !success && delay !== undefined ? new Date(startedAt.getTime() + delay * 1000) : null;
  const status = success ? 'delivered' : next ? 'pending' : 'failed';
  const now = deps.clock.now();
  // Moves on only from the state this attempt started in, and queues the next attempt in the same statement.
  await deps.db.$queryRaw`
    with n as (
      update app_notifications set attempts = ${job.attempt}::int, status = ${status}::text, next_attempt_at = ${next}::timestamp(3),
        last_status_code = ${result.statusCode}::int, last_error = ${result.error}::text, updated_at = ${now}::timestamp(3),
        delivered_at = case when ${success}::boolean then ${now}::timestamp(3) else delivered_at end
      where id = ${notification.id}::text and attempts = ${job.attempt - 1}::int and status = 'pending'
      returning id, app_id
    )
    select n.id, case when ${next !== null}::boolean then (${notificationJobSql(Prisma.sql`n.id`, Prisma.sql`n.app_id`, job.attempt + 1, next ?? now)}).id end as job
    from n`;
  return status === 'delivered' ? 'delivered' : status === 'pending' ? 'retrying' : 'failed';
}

const STUCK_AFTER_SECONDS = 120;

/** Queues every due attempt now, by the service clock, unless its job is queued or running (see sweepDueDeliveries). */
export async function sweepDueNotifications(deps: Pick<NotifyDeps, 'db' | 'clock'>): Promise<number> {
  const rows = await deps.db.$queryRaw<{ id: string }[]>`
    select n.id, (${notificationJobSql(Prisma.sql`n.id`, Prisma.sql`n.app_id`, Prisma.sql`n.attempts + 1`, new Date(0))}).id as job
    from app_notifications n
    where n.status = 'pending' and n.next_attempt_at <= ${deps.clock.now()}::timestamp(3)
      and not exists (select 1 from graphile_worker.jobs j where j.key = 'app_notification:' || n.id
                        and (j.locked_at is null and j.run_at <= now() or j.locked_at > now() - make_interval(secs => ${STUCK_AFTER_SECONDS}::int)))
    limit 1000`;
  return rows.length;
}

/** How long past the push time-out an install may still be finishing before its pending rows count as abandoned. */
const INSTALL_GRACE_MS = 30_000;

/**
 * Deletes installs that stayed pending past the push time-out (their request died between the push and the answer):
 * the client goes, and the installation with it. Their clients were disabled, so they never authorized anything.
 */
export async function sweepStaleInstallations(deps: Pick<NotifyDeps, 'db' | 'clock' | 'webhooks'>): Promise<number> {
  const timeoutMs = (deps.webhooks ?? DEFAULT_WEBHOOK_SETTINGS).timeoutMs;
  const before = new Date(deps.clock.now().getTime() - timeoutMs - INSTALL_GRACE_MS);
  const deleted = await deps.db.oAuthClient.deleteMany({ where: { enabled: false, installation: { is: { status: 'pending', createdAt: { lt: before } } } } });
  return deleted.count;
}
