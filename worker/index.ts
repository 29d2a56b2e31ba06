// graphile-worker inside PostgreSQL: jobs are enqueued in the business transaction and survive restarts.
// Any number of worker processes can run against one database.
import { Logger as GraphileLogger, parseCrontab, run, type Runner, type TaskList } from 'graphile-worker';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Db } from '../schema/db.ts';
import { cleanup } from './tasks/cleanup.ts';
import { expireInvitations } from './tasks/expire-invitations.ts';
import { expireSubscriptions } from './tasks/expire-subscriptions.ts';
import { webhookDeliver } from './tasks/webhook-deliver.ts';
import { webhookSweep } from './tasks/webhook-sweep.ts';
import { appNotify } from './tasks/app-notify.ts';
import { appSweep } from './tasks/app-sweep.ts';
import type { WebhookSettings } from '../schema/modules/webhooks/destination.ts';
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

export async function startWorker(databaseUrl: string, deps: WorkerDeps): Promise<RunningWorker> {
  // Sixteen jobs at once: a webhook receiver that hangs holds at most the four lanes of its own webhook.
  const pgPool = new pg.Pool({ connectionString: databaseUrl, max: 16 });
  // Errors on idle clients (a restarting database) must not crash the process.
  pgPool.on('error', (err) => deps.logger.warn({ err }, 'worker pool error'));
  pgPool.on('connect', (client) => client.on('error', (err) => deps.logger.warn({ err }, 'worker connection error')));
  const taskList: TaskList = { cleanup: cleanup(deps), expire_invitations: expireInvitations(deps), expire_subscriptions: expireSubscriptions(deps),
    webhook_deliver: webhookDeliver(deps), webhook_sweep: webhookSweep(deps), app_notify: appNotify(deps), app_sweep: appSweep(deps) };
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
    concurrency: 16,
    noHandleSignals: true,
    pollInterval: 1000,
    parsedCronItems: parseCrontab(['17 * * * * cleanup', '*/5 * * * * expire_invitations', '* * * * * expire_subscriptions', '* * * * * webhook_sweep', '* * * * * app_sweep'].join('\n')),
  });
  return {
    async stop() {
      await runner.stop();
      await pgPool.end();
    },
  };
}
