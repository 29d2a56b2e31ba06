// Driving the real job queue from a test: enqueue a task by name in graphile-worker's schema, then poll for its effect.
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

/** Polls `probe` until it returns something other than undefined; throws after `ms`. */
export async function waitFor<T>(probe: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('not in time');
    await new Promise((r) => setTimeout(r, 200));
  }
}
