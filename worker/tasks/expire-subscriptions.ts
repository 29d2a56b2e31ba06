import type { Task } from 'graphile-worker';
import type { WorkerDeps } from '../deps.ts';
import { expireSubscriptions as sweep } from '../../schema/modules/subscriptions/subscriptions.service.ts';

export const EXPIRE_SUBSCRIPTIONS_TASK = 'expire_subscriptions';

/** Moves active and trial subscriptions past their end_date to expired (with subscription.updated events). */
export const expireSubscriptions =
  (deps: WorkerDeps): Task =>
  async (_payload, helpers) => {
    const expired = await sweep(deps.db, deps.clock.now());
    if (expired) helpers.logger.info(`expired ${expired} subscriptions`);
  };
