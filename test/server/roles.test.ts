// ROLE splits one deployment into API processes and worker processes on the same PostgreSQL.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startTestServer } from '../helpers/server.ts';

async function hasWorkerSchema(databaseUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const rows = await client.query(`select 1 from information_schema.schemata where schema_name = 'graphile_worker'`);
    return rows.rowCount === 1;
  } finally {
    await client.end();
  }
}

describe('ROLE', () => {
  it('api serves HTTP and never starts the job queue', async () => {
    const server = await startTestServer({ role: 'api' });
    try {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect(await hasWorkerSchema(server.databaseUrl)).toBe(false);
    } finally {
      await server.stop();
    }
  });

  it('worker runs the job queue and listens on no port', async () => {
    const server = await startTestServer({ role: 'worker' });
    try {
      expect(server.url).toBe('');
      expect(await hasWorkerSchema(server.databaseUrl)).toBe(true);
    } finally {
      await server.stop();
    }
  });

  it('all does both', async () => {
    const server = await startTestServer({ role: 'all' });
    try {
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      expect(await hasWorkerSchema(server.databaseUrl)).toBe(true);
    } finally {
      await server.stop();
    }
  });
});
