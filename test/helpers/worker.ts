// Driving the real job queue from a test: enqueue a task by name in graphile-worker's schema (then waitFor its effect).
import pg from 'pg';

/** Asks the running worker to run `task` now, as its cron schedule would. */
export async function runTaskNow(databaseUrl: string, task: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('select graphile_worker.add_job($1)', [task]);
  } finally {
    await client.end();
  }
}
