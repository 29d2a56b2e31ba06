import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { announceExpiredSessions } from '../../schema/modules/sessions/sessions.service.ts';

export const EXPIRE_SESSIONS_TASK = 'expire_sessions';

export const expireSessions =
  (deps: WorkerDeps): Task =>
  async (_payload, helpers) => {
    const announced = await announceExpiredSessions(deps.db, deps.clock.now());
    if (announced) helpers.logger.info(`announced ${announced} expired sessions`);
  };
