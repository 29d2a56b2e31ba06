// A fetch can fail after it has taken its job: the statement that locked the job committed, and only its answer was
// lost (a failover, a cut connection). graphile-worker then fetches again and never learns of that job, which would
// wait out its four-hour lock (graphile/worker#210, test/worker/lost-fetch.test.ts). So after a failed fetch, once the
// failures have stopped for a while and the database answers, this unlocks every job that a pool of this process
// holds and that none of its workers runs. Jobs are run at least once (docs/architecture.md#jobs): a job whose
// outcome was being recorded just then may run again, never not at all.
import type { WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import type { Logger } from 'pino';

/** How long fetches must have stopped failing, and how old a lock must be, before it is in doubt. */
const SETTLED_S = 5;
const RETRY_MS = 1_000;

// The queue's lock goes with its job's. graphile-worker's own force_unlock_workers unlocks a whole pool, the jobs
// its workers run included; this spares those.
const UNLOCK_IN_DOUBT = `
with unlocked as (
  update graphile_worker._private_jobs
     set locked_at = null, locked_by = null
   where locked_by = any($1::text[]) and id <> all($2::bigint[]) and locked_at < now() - make_interval(secs => $3)
  returning job_queue_id
), queues as (
  update graphile_worker._private_job_queues as q
     set locked_at = null, locked_by = null
    from unlocked
   where q.id = unlocked.job_queue_id and q.locked_by = any($1::text[])
)
select count(*)::int as jobs from unlocked`;

export class InDoubtJobs {
  private readonly running = new Set<string>();
  private readonly pgPool: pg.Pool;
  private readonly pools: () => string[];
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /** `pools`: the ids of this process's worker pools, the ended ones included. */
  constructor(events: WorkerEvents, pgPool: pg.Pool, pools: () => string[], logger: Logger) {
    this.pgPool = pgPool;
    this.pools = pools;
    this.logger = logger;
    events.on('job:start', ({ job }) => this.running.add(job.id));
    events.on('job:complete', ({ job }) => this.running.delete(job.id));
    // Each failure puts the sweep off: during an outage the fetches fail every poll, and a lock is in doubt only
    // once they have stopped failing.
    events.on('worker:getJob:error', () => this.sweepIn(SETTLED_S * 1000));
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private sweepIn(ms: number) {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.sweep(), ms);
  }

  private async sweep() {
    try {
      const { rows } = await this.pgPool.query<{ jobs: number }>(UNLOCK_IN_DOUBT, [
        this.pools(),
        [...this.running],
        SETTLED_S,
      ]);
      const jobs = rows[0]?.jobs ?? 0;
      if (jobs) this.logger.warn({ jobs }, 'unlocked the jobs whose fetch lost its answer');
    } catch (error) {
      this.logger.warn({ err: { message: (error as Error).message } }, 'the jobs in doubt cannot be unlocked yet');
      this.sweepIn(RETRY_MS);
    }
  }
}
