import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { assertResetRequestJob, mailRequestedResetLink } from '../../schema/modules/accounts/accounts.service.ts';

/** A password reset request: the link and its mail, if an account uses the address (then mail_send sends it). */
export const passwordResetMail =
  (deps: WorkerDeps): Task =>
  async (payload) => {
    await mailRequestedResetLink(deps.mail, assertResetRequestJob(payload));
  };
