import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../index.ts';
import { assertDeliverJob, attemptDelivery } from '../../schema/modules/webhooks/delivery.service.ts';

/** One attempt of one webhook delivery; it records the attempt and schedules the next one itself. */
export const webhookDeliver = (deps: WorkerDeps): Task => async (payload, helpers) => {
  const job = assertDeliverJob(payload);
  const outcome = await attemptDelivery({ db: deps.db, clock: deps.clock, secretKey: deps.secretKey, webhooks: deps.webhooks }, job);
  if (outcome !== 'delivered') helpers.logger.debug(`webhook delivery ${job.deliveryId} attempt ${job.attempt}: ${outcome}`);
};
