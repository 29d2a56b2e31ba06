// A database of its own for each test file, copied from the migrated template (fast: no migrations).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
  client.on('error', () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A database of its own for a test file: a copy of the template, migrated by this checkout, or with `empty`, a
 * database no migration has touched (for a test that migrates it with another release's, test/e2e/upgrade.test.ts).
 */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const name = `tessera_test_${randomBytes(6).toString('hex')}`;
  const template = options.empty ? '' : ` template "${inject('templateDatabase')}"`;
  // CREATE DATABASE ... TEMPLATE needs the template free of other sessions; retry briefly if two files race.
  for (let attempt = 0; ; attempt++) {
    try {
      await withAdmin((c) => c.query(`create database "${name}"${template}`));
      break;
    } catch (error) {
      if (attempt > 20 || !/being accessed by other users/.test((error as Error).message)) throw error;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  const url = new URL(inject('adminDatabaseUrl'));
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => withAdmin((c) => c.query(`drop database if exists "${name}" with (force)`)).then(() => {}),
  };
}
