// graphile-worker inside PostgreSQL: jobs are enqueued in the business transaction and survive restarts.
// Any number of worker processes can run against one database.
import {
  Logger as GraphileLogger,
  parseCrontab,
  run,
  type Runner,
  type RunnerOptions,
  type TaskList,
} from 'graphile-worker';
import pg from 'pg';
import type { WorkerDeps } from './deps.ts';
import { cleanup, CLEANUP_TASK } from './tasks/cleanup.ts';
import { expireInvitations, EXPIRE_INVITATIONS_TASK } from './tasks/expire-invitations.ts';
import { expireSessions, EXPIRE_SESSIONS_TASK } from './tasks/expire-sessions.ts';
import { expireSubscriptions, EXPIRE_SUBSCRIPTIONS_TASK } from './tasks/expire-subscriptions.ts';
import { webhookDeliver } from './tasks/webhook-deliver.ts';
import { webhookSweep, WEBHOOK_SWEEP_TASK } from './tasks/webhook-sweep.ts';
import { appNotify } from './tasks/app-notify.ts';
import { mailSend } from './tasks/mail-send.ts';
import { passwordResetMail } from './tasks/password-reset-mail.ts';
import { MAIL_SEND_TASK } from '../schema/modules/mail/delivery.service.ts';
import { PASSWORD_RESET_TASK } from '../schema/modules/accounts/accounts.service.ts';
import { appSweep, APP_SWEEP_TASK } from './tasks/app-sweep.ts';
import { DELIVER_TASK } from '../schema/modules/webhooks/delivery.service.ts';
import { NOTIFY_TASK } from '../schema/modules/apps/notifications.service.ts';
import { InDoubtJobs } from './in-doubt-jobs.ts';
import { InFlight } from './in-flight.ts';

export interface RunningWorker {
  stop(): Promise<void>;
}

/** When the scheduled tasks run (crontab: minute, hour, day of month, month, day of week). */
const SCHEDULE: [at: string, task: string][] = [
  ['17 * * * *', CLEANUP_TASK],
  ['*/5 * * * *', EXPIRE_INVITATIONS_TASK],
  ['* * * * *', EXPIRE_SESSIONS_TASK],
  ['* * * * *', EXPIRE_SUBSCRIPTIONS_TASK],
  ['* * * * *', WEBHOOK_SWEEP_TASK],
  ['* * * * *', APP_SWEEP_TASK],
];

const CONCURRENCY = 16;
/** Between attempts to start the job queue again while the database does not answer. */
const RESTART_DELAY_MS = 1_000;
/** Attempts of one webhook one worker runs at once: a hanging receiver leaves the other half of the slots free. */
const WEBHOOK_IN_FLIGHT = CONCURRENCY / 2;

export async function startWorker(databaseUrl: string, deps: WorkerDeps): Promise<RunningWorker> {
  // CONCURRENCY jobs at once; a webhook receiver that hangs holds at most the cap of its own webhook's flag.
  const inFlight = new InFlight(WEBHOOK_IN_FLIGHT);
  // Webhook attempts run their statements on this pool too (webhook-deliver.ts): a connection per slot and a few for fetching.
  const pgPool = new pg.Pool({ connectionString: databaseUrl, max: CONCURRENCY + 4 });
  // Errors on idle clients (a restarting database) must not crash the process.
  // 57P01 is PostgreSQL ending the connection at shutdown (the embedded server stops on its own signal hook):
  // expected, so not a warning. Anything else is logged by its message and code, not the whole client.
  const report = (what: string) => (err: Error & { code?: string }) => {
    if (err.code === '57P01') deps.logger.debug({ code: err.code }, `${what}: server shut down`);
    else deps.logger.warn({ err: { message: err.message, code: err.code } }, what);
  };
  pgPool.on('error', report('worker pool error'));
  pgPool.on('connect', (client) => client.on('error', report('worker connection error')));
  const taskList: TaskList = {
    [CLEANUP_TASK]: cleanup(deps),
    [EXPIRE_INVITATIONS_TASK]: expireInvitations(deps),
    [EXPIRE_SESSIONS_TASK]: expireSessions(deps),
    [EXPIRE_SUBSCRIPTIONS_TASK]: expireSubscriptions(deps),
    [DELIVER_TASK]: inFlight.capped(webhookDeliver(deps)),
    [WEBHOOK_SWEEP_TASK]: webhookSweep(deps),
    [NOTIFY_TASK]: appNotify(deps),
    [APP_SWEEP_TASK]: appSweep(deps),
    [MAIL_SEND_TASK]: mailSend(deps),
    [PASSWORD_RESET_TASK]: passwordResetMail(deps),
  };
  // graphile-worker's own lines go to the service's logger; a line per completed job is debug, not info: printed to
  // the console it took a tenth of a delivery's CPU.
  const logger = new GraphileLogger(() => (level, message, meta) => {
    if (level === 'error') deps.logger.error(meta ?? {}, message);
    else if (level === 'warning') deps.logger.warn(meta ?? {}, message);
    else deps.logger.debug(meta ?? {}, message);
  });
  const options: RunnerOptions = {
    pgPool,
    logger,
    taskList,
    concurrency: CONCURRENCY,
    forbiddenFlags: inFlight.forbidden,
    events: inFlight.events,
    // Outcomes are sent together: a statement per job was a large share of the database's work per delivery. Failures
    // too, so that one that cannot be recorded ends the pool (restarted below) instead of rejecting unhandled.
    preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    noHandleSignals: true,
    pollInterval: 1000,
    parsedCronItems: parseCrontab(SCHEDULE.map(([at, task]) => `${at} ${task}`).join('\n')),
  };
  const pools = new Set<string>();
  inFlight.events.on('pool:create', ({ workerPool }) => pools.add(workerPool.id));
  const inDoubt = new InDoubtJobs(inFlight.events, pgPool, () => [...pools], deps.logger);
  let stopping = false;
  let runner: Runner = await run(options);

  // graphile-worker shuts its pool down when it cannot record a job's outcome or a worker of it cannot fetch, as
  // when the database fails over under it, and the process would go on with no worker (test/e2e/failover.test.ts):
  // that shutdown can wait for ever on the database that went away. Start a new pool at once instead, and once the
  // database answers unlock the jobs the ended one held, which would otherwise wait out a four-hour lock.
  const restart = async () => {
    deps.logger.error('the job queue stopped after a database error: starting it again');
    while (!stopping) {
      try {
        await pgPool.query('select graphile_worker.force_unlock_workers($1::text[])', [[...pools]]);
        pools.clear();
        inFlight.reset();
        runner = await run(options);
        return;
      } catch (error) {
        deps.logger.warn({ err: { message: (error as Error).message } }, 'the job queue cannot start yet');
        await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS));
      }
    }
  };
  let restarting = false;
  inFlight.events.on('pool:gracefulShutdown', () => {
    if (stopping || restarting) return;
    restarting = true;
    void restart().finally(() => (restarting = false));
  });
  return {
    async stop() {
      stopping = true;
      inDoubt.stop();
      await runner.stop();
      await pgPool.end();
    },
  };
}
