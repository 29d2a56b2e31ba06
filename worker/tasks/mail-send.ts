import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { assertMailJob, sendQueuedMail } from '../../schema/modules/mail/delivery.service.ts';

/** One attempt at one queued mail; a temporary failure throws, and graphile-worker retries with its back-off. */
export const mailSend = (deps: WorkerDeps): Task => async (payload, helpers) => {
  const job = assertMailJob(payload);
  const started = performance.now();
  const outcome = await sendQueuedMail(deps.mail, job, { number: helpers.job.attempts, last: helpers.job.attempts >= helpers.job.max_attempts });
  // The service counts what SMTP answers; a mail kept in the development mailbox (no SMTP_URL) is counted here.
  if (outcome === 'mailbox') deps.metrics.mailAttempt('mailbox', (performance.now() - started) / 1000);
  helpers.logger.debug(`mail ${job.mailId}: ${outcome}`);
};
