import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { assertDeliverJob, attemptDelivery } from '../../schema/modules/webhooks/delivery.service.ts';
import { pgSql } from '../../schema/push/signed-attempt.ts';

/** One attempt of one webhook delivery; it records the attempt and schedules the next one itself. */
export const webhookDeliver =
  (deps: WorkerDeps): Task =>
  async (payload, helpers) => {
    const job = assertDeliverJob(payload);
    const started = performance.now();
    const outcome = await attemptDelivery(
      { ...deps, sql: pgSql((q) => helpers.withPgClient((client) => client.query(q))) },
      job,
    );
    if (outcome !== 'skipped') deps.metrics.webhookAttempt(outcome, (performance.now() - started) / 1000);
    if (outcome !== 'delivered') helpers.logger.debug(`webhook delivery ${job.id} attempt ${job.attempt}: ${outcome}`);
  };
