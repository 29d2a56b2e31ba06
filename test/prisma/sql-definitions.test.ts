// The functions and triggers under prisma/sql/ are the ones the migrations leave in force
// (docs/architecture.md#where-things-go). A migration that changes one without its file, or a file changed with no
// migration, fails here; so does a function or trigger that has no file, or a file whose function is gone.
import pg from 'pg';
import { expect, it } from 'vitest';
import { compareWithDatabase, definitionsSql, listSqlFiles, type SqlFile } from '../../prisma/sql-definitions.ts';
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

// db:diff's part for functions is this comparison and definitionsSql, run against a scratch migrated database: here
// the same against this file's one, with files that differ from it in every way that can be.
it('writes the migration that brings the migrated database to the files', async () => {
  const edited: SqlFile[] = [
    {
      name: 'tessera_stamp_update.sql',
      sql: `CREATE OR REPLACE FUNCTION tessera_stamp_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.updated_at := now();
  RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER "webhooks_stamp_update" BEFORE UPDATE ON "webhooks"
  FOR EACH ROW EXECUTE FUNCTION tessera_stamp_update();
`,
    },
    ...(await listSqlFiles())
      .filter((file) => file.name !== 'tessera_queue_mail.sql')
      .map((file) =>
        file.name === 'tessera_webhooks_wanting.sql'
          ? { ...file, sql: file.sql.replace('w.is_active', 'w.is_active IS TRUE') }
          : file.name === 'tessera_webhook_delivery_job.sql'
            ? { ...file, sql: file.sql.replaceAll('run_at', 'due_at') }
            : file.name === 'tessera_webhook_fan_out.sql'
              ? { ...file, sql: file.sql.slice(0, file.sql.indexOf('CREATE OR REPLACE TRIGGER')) }
              : file,
      ),
  ];
  await withMigratedDatabase(async (client) => {
    const differences = await compareWithDatabase(client, edited);
    expect(differences.stale.map((file) => file.name)).toEqual([
      'tessera_stamp_update.sql',
      'tessera_webhook_delivery_job.sql',
      'tessera_webhooks_wanting.sql',
    ]);
    // The removed trigger and function, and the function whose parameter is renamed (CREATE OR REPLACE cannot).
    expect(differences.drops).toEqual([
      'DROP TRIGGER events_webhook_fan_out ON events;',
      'DROP FUNCTION tessera_queue_mail(text,text,text,text,text,text,timestamp without time zone);',
      'DROP FUNCTION tessera_webhook_delivery_job(text,text,integer,timestamp with time zone);',
    ]);
    const { before, after } = definitionsSql(differences);
    // As prisma/migrate.ts applies a migration: one transaction.
    await client.query(`begin; ${before} ${after} commit;`);
    expect((await compareWithDatabase(client, edited)).problems).toEqual([]);
  });
});
