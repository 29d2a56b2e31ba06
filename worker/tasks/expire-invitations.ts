import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { announceExpiredInvitations } from '../../schema/modules/members/invitations.service.ts';

export const EXPIRE_INVITATIONS_TASK = 'expire_invitations';

export const expireInvitations =
  (deps: WorkerDeps): Task =>
  async (_payload, helpers) => {
    const announced = await announceExpiredInvitations(deps.db, deps.clock.now());
    if (announced) helpers.logger.info(`announced ${announced} expired invitations`);
  };
