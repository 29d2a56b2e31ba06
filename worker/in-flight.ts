// How many jobs of one flag (a webhook: webhook:<id>) a worker runs at once. Webhook jobs are in no named queue (a
// queue runs one job at a time and is slow to fetch from), so without this cap one hanging receiver could hold every
// slot. Before each fetch the worker forbids (graphile-worker's forbiddenFlags) every flag whose running jobs plus
// the fetches under way pass the cap: a fetch brings at most one job, so a flag with jobs running never goes past it.
// Only a flag the worker has not seen running can (the first fetches, all at once): the task puts those jobs back.
import { EventEmitter } from 'node:events';
import type { Job, JobHelpers, Task, WorkerEvents } from 'graphile-worker';

const flagsOf = (job: Job) => Object.keys(job.flags ?? {});

export class InFlight {
  /** Pass to run() as `events`, so that no fetch is missed before the runner is returned. */
  readonly events: WorkerEvents = new EventEmitter() as WorkerEvents;
  private readonly running = new Map<string, number>();
  private fetching = 0;
  private readonly cap: number;

  constructor(cap: number) {
    this.cap = cap;
    const fetched = () => {
      this.fetching = Math.max(0, this.fetching - 1);
    };
    this.events.on('job:start', ({ job }) => {
      fetched();
      for (const f of flagsOf(job)) this.running.set(f, (this.running.get(f) ?? 0) + 1);
    });
    this.events.on('worker:getJob:empty', fetched);
    this.events.on('worker:getJob:error', fetched);
    this.events.on('job:complete', ({ job }) => {
      for (const f of flagsOf(job)) {
        const n = (this.running.get(f) ?? 1) - 1;
        if (n > 0) this.running.set(f, n);
        else this.running.delete(f);
      }
    });
  }

  /** Forgets every job and fetch: the pool that ran them has ended, and a new one starts with none. */
  reset(): void {
    this.running.clear();
    this.fetching = 0;
  }

  /** forbiddenFlags: called once before each fetch. */
  readonly forbidden = (): string[] | null => {
    this.fetching++;
    const full: string[] = [];
    for (const [flag, n] of this.running) if (n + this.fetching > this.cap) full.push(flag);
    // null, not []: graphile-worker then fetches the usual way.
    return full.length ? full : null;
  };

  /** `task`, unless its job is past a cap anyway (a safety net: the fetch rule keeps that from happening): then it is put back. */
  capped(task: Task): Task {
    return async (payload, helpers) => {
      const flags = flagsOf(helpers.job);
      if (flags.some((f) => (this.running.get(f) ?? 0) > this.cap)) return putBack(payload, helpers, flags);
      await task(payload, helpers);
    };
  }
}

/** The same job again a moment later, with its key (which moves the key off this running one). */
async function putBack(payload: unknown, helpers: JobHelpers, flags: string[]) {
  const { job } = helpers;
  await helpers.addJob(job.task_identifier, payload, {
    jobKey: job.key ?? undefined,
    flags,
    priority: job.priority,
    runAt: new Date(Date.now() + 250),
  });
}
