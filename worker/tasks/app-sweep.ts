import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { sweepDueNotifications, sweepStaleInstallations } from '../../schema/modules/apps/notifications.service.ts';

export const APP_SWEEP_TASK = 'app_sweep';

/** Queues due app notices by the service clock, and deletes installs whose request died before it finished. */
export const appSweep =
  (deps: WorkerDeps): Task =>
  async (_payload, helpers) => {
    const moved = await sweepDueNotifications(deps);
    const abandoned = await sweepStaleInstallations(deps);
    if (moved || abandoned)
      helpers.logger.info(`app sweep: queued ${moved} due notices, removed ${abandoned} abandoned installs`);
  };
