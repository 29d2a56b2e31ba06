import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { sweepDueDeliveries } from '../../schema/modules/webhooks/delivery.service.ts';

export const WEBHOOK_SWEEP_TASK = 'webhook_sweep';

/** Runs webhook attempts that are due by the service clock but not queued to run (see sweepDueDeliveries). */
export const webhookSweep =
  (deps: WorkerDeps): Task =>
  async (_payload, helpers) => {
    const moved = await sweepDueDeliveries(deps);
    if (moved) helpers.logger.info(`queued ${moved} due webhook attempts`);
  };
