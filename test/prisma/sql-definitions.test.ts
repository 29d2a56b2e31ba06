// The functions and triggers under prisma/sql/ are the ones the migrations leave in force
// (docs/architecture.md#where-things-go). A migration that changes one without its file, or a file changed with no
// migration, fails here; so does a function or trigger that has no file, or a file whose function is gone.
import pg from 'pg';
import { expect, it } from 'vitest';
import { compareWithDatabase, listSqlFiles } from '../../prisma/sql-definitions.ts';
import { createTestDatabase } from '../helpers/db.ts';

async function withMigratedDatabase(fn: (client: pg.Client) => Promise<void>): Promise<void> {
  const db = await createTestDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await fn(client);
  } finally {
    await client.end();
    await db.drop();
  }
}

it('prisma/sql/ holds every function and trigger of the migrated database, as the migrations left them', async () => {
  await withMigratedDatabase(async (client) => {
    const { problems } = await compareWithDatabase(client, await listSqlFiles());
    expect(
      problems,
      'change the file under prisma/sql/, then `npm run db:diff -- <name>` writes the migration',
    ).toEqual([]);
  });
});

it('names each file after the function it defines, and replaces what exists, so that a migration can run it', async () => {
  for (const { name, sql } of await listSqlFiles()) {
    expect(sql, name).toMatch(new RegExp(`^CREATE OR REPLACE FUNCTION ${name.replace(/\.sql$/, '')}\\(`, 'm'));
    expect(sql, name).not.toMatch(/^CREATE (?!OR REPLACE )/im);
  }
});
