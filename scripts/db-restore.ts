// `npm run db:restore -- FILE [--force]`: puts a backup of `npm run db:backup` into the embedded database under
// DATA_DIR (or DATABASE_URL's) while the service is stopped. A database that holds any row is replaced only with
// --force. The file is read through once before anything changes; then the schemas are dropped, the backup's
// migrations applied, and its rows loaded in one transaction with triggers (foreign keys among them) off, as pg_restore
// does; sequences are set last.
import { access } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { listMigrations, migrate } from '../prisma/migrate.ts';
import { StartupError } from '../prisma/startup-error.ts';
import {
  listSequences,
  listTables,
  openArchive,
  qualified,
  quoteIdent,
  SCHEMAS,
  SESSION_SETTINGS,
  verifyArchive,
  type Entry,
} from './backup-archive.ts';
import { databaseForCommand, databaseSettings, runCommand, runningServer } from './embedded-db.ts';

/** Rows per INSERT: PostgreSQL takes at most 65,535 parameters in one statement. */
const MAX_PARAMETERS = 30_000;
const MAX_BATCH_BYTES = 8 * 1024 * 1024;

function parseArguments(): { file: string; force: boolean } {
  try {
    const {
      positionals: [file, ...more],
      values,
    } = parseArgs({
      allowPositionals: true,
      options: { force: { type: 'boolean', default: false } },
    });
    if (file !== undefined && !more.length) return { file: path.resolve(file), force: values.force };
  } catch (error) {
    throw new StartupError(`${(error as Error).message}; usage: npm run db:restore -- FILE [--force]`);
  }
  throw new StartupError('usage: npm run db:restore -- FILE [--force]');
}

/** The tables that hold a row (migration bookkeeping aside): none, and the database may be replaced without --force. */
async function tablesWithRows(client: pg.Client): Promise<string[]> {
  const found: string[] = [];
  for (const { name } of await listTables(client)) {
    const { rows } = await client.query(`select 1 from only ${qualified(name)} limit 1`);
    if (rows.length) found.push(name);
  }
  // Tessera's own tables first: the ones an operator recognizes.
  return found.sort((a, b) => Number(!a.startsWith('public.')) - Number(!b.startsWith('public.')));
}

/** Drops Tessera's schemas and applies the backup's migrations: the schema its rows were written from. */
async function rebuildSchema(url: string, migrations: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('set client_min_messages = warning');
    for (const schema of SCHEMAS) await client.query(`drop schema if exists ${quoteIdent(schema)} cascade`);
    await client.query('create schema public');
  } finally {
    await client.end();
  }
  await migrate(url, () => {}, { only: new Set(migrations) });
}

/** Loads every row and sequence of the backup in one transaction; returns what it loaded. */
async function load(
  client: pg.Client,
  entries: AsyncGenerator<Entry>,
  warn: (msg: string) => void,
): Promise<{ tables: number; rows: number }> {
  await client.query('begin');
  // Foreign keys are triggers: off while rows arrive in table order, not in the order they refer to each other.
  await client.query('set local session_replication_role = replica');
  await client.query(SESSION_SETTINGS);
  const targets = new Map((await listTables(client)).map((t) => [t.name, new Set(t.columns)]));
  // Rows a migration wrote (seed data) are in the backup too.
  if (targets.size)
    await client.query(`truncate ${[...targets.keys()].map(qualified).join(', ')} restart identity cascade`);
  const sequences = new Set(await listSequences(client));

  let tables = 0;
  let rows = 0;
  let insert: { sql: string; keep: number[] } | undefined;
  let batch: (string | null)[] = [];
  let batchRows = 0;
  let batchBytes = 0;
  const flush = async () => {
    if (!insert || batchRows === 0) return;
    const width = insert.keep.length;
    const tuples = Array.from(
      { length: batchRows },
      (_, r) => `(${Array.from({ length: width }, (_, c) => `$${r * width + c + 1}`).join(', ')})`,
    );
    await client.query(`${insert.sql} ${tuples.join(', ')}`, batch);
    rows += batchRows;
    batch = [];
    batchRows = 0;
    batchBytes = 0;
  };

  for await (const entry of entries) {
    if (Array.isArray(entry)) {
      if (!insert) continue; // a table this schema no longer has
      for (const i of insert.keep) {
        const value = entry[i] ?? null;
        batch.push(value);
        batchBytes += value?.length ?? 0;
      }
      batchRows++;
      if ((batchRows + 1) * insert.keep.length > MAX_PARAMETERS || batchBytes > MAX_BATCH_BYTES) await flush();
    } else if ('table' in entry) {
      await flush();
      tables++;
      const columns = targets.get(entry.table);
      if (!columns) {
        warn(`skipped the rows of ${entry.table}: this database has no such table`);
        insert = undefined;
        continue;
      }
      const keep = entry.columns.flatMap((c, i) => (columns.has(c) ? [i] : []));
      const kept = entry.columns.filter((c) => columns.has(c));
      const dropped = entry.columns.filter((c) => !columns.has(c));
      if (dropped.length)
        warn(`skipped column(s) ${dropped.join(', ')} of ${entry.table}: this database has no such column`);
      // Identity columns generated always take the backup's values too.
      insert = {
        sql: `insert into ${qualified(entry.table)} (${kept.map((c) => quoteIdent(c)).join(', ')}) overriding system value values`,
        keep,
      };
    } else if ('sequence' in entry) {
      await flush();
      insert = undefined;
      if (sequences.has(entry.sequence))
        await client.query('select setval($1::regclass, $2::bigint, $3)', [
          qualified(entry.sequence),
          entry.value,
          entry.called,
        ]);
      else warn(`skipped sequence ${entry.sequence}: this database has no such sequence`);
    } else if ('end' in entry) {
      await flush();
    }
  }
  await client.query('commit');
  return { tables, rows };
}

await runCommand('db:restore', async () => {
  const { file, force } = parseArguments();
  const { header, entries } = await openArchive(file);
  const known = new Set((await listMigrations()).map((m) => m.name));
  const unknown = header.migrations.find((name) => !known.has(name));
  if (unknown)
    throw new StartupError(
      `${file} was made by a newer Tessera (its migration ${unknown} is not in this one): restore it with that version or a later one`,
    );
  await verifyArchive(file, entries);

  const { databaseUrl, dataDir, secretKeySet } = databaseSettings();
  if (!databaseUrl) {
    const running = await runningServer(dataDir);
    if (running)
      throw new StartupError(
        `Tessera is running on ${dataDir} (its PostgreSQL is PID ${running.pid}): stop it, then restore`,
      );
  }
  const database = await databaseForCommand(databaseUrl, dataDir);
  const { url } = database;
  const where = databaseUrl ? 'the database at DATABASE_URL' : `the embedded database in ${dataDir}`;
  try {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (error) {
      throw new StartupError(`cannot connect to ${where}: ${(error as Error).message}`);
    }
    try {
      const filled = await tablesWithRows(client);
      if (filled.length && !force) {
        const some = filled.slice(0, 3).join(', ') + (filled.length > 3 ? ` and ${filled.length - 3} more` : '');
        throw new StartupError(
          `${where} is not empty (rows in ${some}): pass --force to replace its data with the backup`,
        );
      }
      await rebuildSchema(url, header.migrations);
      const { tables, rows } = await load(client, entries(), (msg) => console.error(`warning: ${msg}`));
      console.log(
        `restored ${rows} rows of ${tables} tables into ${where} from ${file} (a backup of ${header.createdAt})`,
      );
    } finally {
      await client.end().catch(() => {});
    }
  } finally {
    await database.stop();
  }
  const keyFile = path.join(dataDir, 'secret.key');
  const haveKey =
    secretKeySet ||
    (await access(keyFile).then(
      () => true,
      () => false,
    ));
  console.log(
    haveKey
      ? 'Start Tessera with the SECRET_KEY of the deployment that made this backup: signing keys and webhook secrets are encrypted with it (a different key stops the start with a message that says so).'
      : `No SECRET_KEY is set and ${keyFile} does not exist: put the backed-up deployment's secret.key there (or set its SECRET_KEY) before starting, or its signing keys and webhook secrets cannot be decrypted.`,
  );
});
