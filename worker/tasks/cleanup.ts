import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { deleteExpiredCredentials } from '../../schema/maintenance/cleanup.ts';

export const CLEANUP_TASK = 'cleanup';

export const cleanup =
  (deps: WorkerDeps): Task =>
  async (_payload, helpers) => {
    const deleted = await deleteExpiredCredentials(deps.db, deps.clock.now());
    helpers.logger.info(`cleanup removed ${deleted} expired rows`);
  };
