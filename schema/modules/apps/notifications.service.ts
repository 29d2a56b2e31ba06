// Notices to apps sent by the worker (app.uninstalled): signed like the install push with the app's current secret,
// attempted on the webhook retry schedule (0, 1, 5, 15, 60 minutes), the same body bytes every time. Also the
// sweep that finishes what a dead process left: due attempts not queued, and installs that never completed.
import { Prisma } from '../../db.ts';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../push/destination.ts';
import {
  advanceSql,
  assertAttemptJob,
  attemptJobSql,
  attemptSigned,
  nextJobSql,
  outcomeOf,
  recordAttempt,
  STUCK_AFTER_SECONDS,
  type AttemptDeps,
  type AttemptLane,
  type AttemptOutcome,
} from '../../push/signed-attempt.ts';

export const NOTIFY_TASK = 'app_notify';
const lane: AttemptLane = { task: NOTIFY_TASK, idKey: 'notificationId', keyPrefix: 'app_notification:' };

export const assertNotifyJob = (payload: unknown) => assertAttemptJob(lane, payload);

/** The job of one attempt, one app's notices one at a time, keyed so the sweep can move it. */
export const notificationJobSql = (
  id: Prisma.Sql | string,
  appId: Prisma.Sql | string,
  attempt: Prisma.Sql | number,
  runAt: Date | null,
) => attemptJobSql(lane, id, Prisma.sql`'app:' || (${appId})::text`, attempt, runAt);

export async function attemptNotification(
  deps: AttemptDeps,
  job: { id: string; attempt: number },
): Promise<AttemptOutcome> {
  const notification = await deps.db.appNotification.findUnique({
    where: { id: job.id },
    include: { app: { select: { id: true, webhookUrl: true, signingSecretEncrypted: true } } },
  });
  // Done already (a job run twice), or gone with its app.
  if (!notification || notification.status !== 'pending' || notification.attempts >= job.attempt) return 'skipped';

  const { app } = notification;
  const sent = await attemptSigned(deps, job.attempt, {
    url: app.webhookUrl,
    secretEncrypted: app.signingSecretEncrypted,
    eventId: notification.id,
    deliveryId: notification.id,
    kind: notification.kind,
    body: notification.body,
  });
  await recordAttempt(
    sent,
    (a) => deps.db.$queryRaw`
    with n as (${advanceSql('app_notifications', notification.id, a, Prisma.sql`, last_error = ${a.result.error}::text`)} returning id, app_id)
    select n.id, ${nextJobSql(a, notificationJobSql(Prisma.sql`n.id`, Prisma.sql`n.app_id`, job.attempt + 1, a.next))} as job
    from n`,
  );
  return outcomeOf(sent);
}

/** Queues every due attempt now, by the service clock, unless its job is queued or running (see sweepDueDeliveries). */
export async function sweepDueNotifications(deps: Pick<AttemptDeps, 'db' | 'clock'>): Promise<number> {
  const rows = await deps.db.$queryRaw<{ id: string }[]>`
    select n.id, (${notificationJobSql(Prisma.sql`n.id`, Prisma.sql`n.app_id`, Prisma.sql`n.attempts + 1`, new Date(0))}).id as job
    from app_notifications n
    where n.status = 'pending' and n.next_attempt_at <= ${deps.clock.now()}::timestamp(3)
      and not exists (select 1 from graphile_worker.jobs j where j.key = ${lane.keyPrefix}::text || n.id
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
export async function sweepStaleInstallations(deps: Pick<AttemptDeps, 'db' | 'clock' | 'webhooks'>): Promise<number> {
  const timeoutMs = (deps.webhooks ?? DEFAULT_WEBHOOK_SETTINGS).timeoutMs;
  const before = new Date(deps.clock.now().getTime() - timeoutMs - INSTALL_GRACE_MS);
  const deleted = await deps.db.oAuthClient.deleteMany({
    where: { enabled: false, installation: { is: { status: 'pending', createdAt: { lt: before } } } },
  });
  return deleted.count;
}
