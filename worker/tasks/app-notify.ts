import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { assertNotifyJob, attemptNotification } from '../../schema/modules/apps/notifications.service.ts';

/** One attempt of one notice to a marketplace app; it records the attempt and schedules the next one itself. */
export const appNotify =
  (deps: WorkerDeps): Task =>
  async (payload, helpers) => {
    const job = assertNotifyJob(payload);
    const outcome = await attemptNotification(deps, job);
    if (outcome !== 'delivered') helpers.logger.debug(`app notification ${job.id} attempt ${job.attempt}: ${outcome}`);
  };
