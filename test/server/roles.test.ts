// ROLE splits one deployment into API processes and worker processes on the same PostgreSQL.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startTestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

/**
 * Whether a job queue runs on this database: graphile-worker keeps a connection LISTENing for new jobs. (Its schema
 * is there in every deployment: the migrations install it, so that any process can enqueue.) A process is ready
 * only once its worker has started; the connection follows within moments (an API process never opens one).
 */
async function runsJobQueue(databaseUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const rows = await client.query(
      `select 1 from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and query ilike 'listen%jobs%'`,
    );
    return (rows.rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}

describe('ROLE', () => {
  it('api serves HTTP and never starts the job queue', async () => {
    const server = await startTestServer({ role: 'api' });
    try {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect(await runsJobQueue(server.databaseUrl)).toBe(false);
    } finally {
      await server.stop();
    }
  });

  it('worker runs the job queue and listens on no port', async () => {
    const server = await startTestServer({ role: 'worker' });
    try {
      expect(server.url).toBe('');
      await waitFor(async () => ((await runsJobQueue(server.databaseUrl)) ? true : undefined));
    } finally {
      await server.stop();
    }
  });

  it('all does both', async () => {
    const server = await startTestServer({ role: 'all' });
    try {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      // graphile-worker opens its LISTEN connection beside its start, not before it: on a busy machine a moment later.
      await waitFor(async () => ((await runsJobQueue(server.databaseUrl)) ? true : undefined));
    } finally {
      await server.stop();
    }
  });
});
