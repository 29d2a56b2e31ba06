// graphile-worker inside PostgreSQL: jobs are enqueued in the business transaction and survive restarts.
// Any number of worker processes can run against one database.
import { Logger as GraphileLogger, parseCrontab, run, type Runner, type TaskList } from 'graphile-worker';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Db } from '../schema/db.ts';
import { cleanup } from './tasks/cleanup.ts';
import { expireInvitations } from './tasks/expire-invitations.ts';
import { expireSessions } from './tasks/expire-sessions.ts';
import { expireSubscriptions } from './tasks/expire-subscriptions.ts';
import { webhookDeliver } from './tasks/webhook-deliver.ts';
import { webhookSweep } from './tasks/webhook-sweep.ts';
import { appNotify } from './tasks/app-notify.ts';
import { appSweep } from './tasks/app-sweep.ts';
import { InFlight } from './in-flight.ts';
import type { WebhookSettings } from '../schema/push/destination.ts';
import type { Clock } from '../schema/lib/clock.ts';

export interface WorkerDeps {
  db: Db;
  logger: Logger;
  clock: Clock;
  /** Decrypts webhook secrets. */
  secretKey: Uint8Array;
  webhooks?: WebhookSettings;
}

export interface RunningWorker {
  stop(): Promise<void>;
}

const CONCURRENCY = 16;
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
  const taskList: TaskList = { cleanup: cleanup(deps), expire_invitations: expireInvitations(deps), expire_sessions: expireSessions(deps), expire_subscriptions: expireSubscriptions(deps),
    webhook_deliver: inFlight.capped(webhookDeliver(deps)), webhook_sweep: webhookSweep(deps), app_notify: appNotify(deps), app_sweep: appSweep(deps) };
  // graphile-worker's own lines go to the service's logger; a line per completed job is debug, not info: printed to
  // the console it took a tenth of a delivery's CPU.
  const logger = new GraphileLogger(() => (level, message, meta) => {
    if (level === 'error') deps.logger.error(meta ?? {}, message);
    else if (level === 'warning') deps.logger.warn(meta ?? {}, message);
    else deps.logger.debug(meta ?? {}, message);
  });
  const runner: Runner = await run({
    pgPool,
    logger,
    taskList,
    concurrency: CONCURRENCY,
    forbiddenFlags: inFlight.forbidden,
    events: inFlight.events,
    // Completions are sent together: a statement per job was a large share of the database's work per delivery.
    preset: { worker: { completeJobBatchDelay: 0 } },
    noHandleSignals: true,
    pollInterval: 1000,
    parsedCronItems: parseCrontab(['17 * * * * cleanup', '*/5 * * * * expire_invitations', '* * * * * expire_sessions', '* * * * * expire_subscriptions', '* * * * * webhook_sweep', '* * * * * app_sweep'].join('\n')),
  });
  return {
    async stop() {
      await runner.stop();
      await pgPool.end();
    },
  };
}
