// What every task is given (docs/architecture.md#jobs). Its own file, so that the tasks need not import
// worker/index.ts, which imports them.
import type { Logger } from 'pino';
import type { Db } from '../schema/db.ts';
import type { Clock } from '../schema/lib/clock.ts';
import type { WebhookSettings } from '../schema/push/destination.ts';
import type { MailDeps } from '../schema/modules/mail/delivery.service.ts';
import type { Metrics } from '../schema/metrics/metrics.ts';
import type { Retention } from '../schema/maintenance/cleanup.ts';

export interface WorkerDeps {
  db: Db;
  logger: Logger;
  clock: Clock;
  /** Decrypts webhook secrets. */
  secretKey: Uint8Array;
  webhooks?: WebhookSettings;
  /** Sends queued mail, or keeps it in the development mailbox. */
  mail: MailDeps;
  metrics: Metrics;
  /** What the cleanup keeps; the defaults when not given. */
  retention?: Retention;
}
