import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../index.ts';
import { deleteExpiredCredentials } from '../../schema/maintenance/cleanup.ts';

export const cleanup = (deps: WorkerDeps): Task => async (_payload, helpers) => {
  const deleted = await deleteExpiredCredentials(deps.db, deps.clock.now());
  helpers.logger.info(`cleanup removed ${deleted} expired rows`);
};
