import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { deleteExpired } from '../../schema/maintenance/cleanup.ts';

export const CLEANUP_TASK = 'cleanup';

export const cleanup =
  (deps: WorkerDeps): Task =>
  async (_payload, helpers) => {
    const deleted = await deleteExpired(deps.db, deps.clock.now(), deps.retention);
    const total = Object.values(deleted).reduce((a, b) => a + b, 0);
    helpers.logger.info(`cleanup removed ${total} rows`, { deleted });
  };
