// Driving the real job queue from a test: enqueue a task by name in graphile-worker's schema and wait until the
// running worker has finished it, so that a test can then assert what it did, or that it did nothing.
import pg from 'pg';
import { waitFor } from './wait.ts';

/**
 * Asks the running worker to run `task` now, as its cron schedule would, and returns once it has succeeded:
 * graphile-worker deletes a job's row on success and keeps it, with `last_error`, on failure (which throws here).
 */
export async function runTaskNow(databaseUrl: string, task: string, ms = 15_000): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const {
      rows: [job],
    } = await client.query<{ id: string }>('select (graphile_worker.add_job($1)).id', [task]);
    await waitFor(async () => {
      const {
        rows: [row],
      } = await client.query<{ last_error: string | null }>(
        'select last_error from graphile_worker.jobs where id = $1',
        [job!.id],
      );
      if (row?.last_error) throw new Error(`task ${task} failed: ${row.last_error}`);
      return row ? undefined : true;
    }, ms);
  } finally {
    await client.end();
  }
}
