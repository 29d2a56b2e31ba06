import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { assertMailJob, sendQueuedMail } from '../../schema/modules/mail/delivery.service.ts';

/** One attempt at one queued mail; a temporary failure throws, and graphile-worker retries with its back-off. */
export const mailSend =
  (deps: WorkerDeps): Task =>
  async (payload, helpers) => {
    const job = assertMailJob(payload);
    const outcome = await sendQueuedMail(deps.mail, job, {
      number: helpers.job.attempts,
      last: helpers.job.attempts >= helpers.job.max_attempts,
    });
    helpers.logger.debug(`mail ${job.mailId}: ${outcome}`);
  };
