// `npm run db:backup -- FILE`: writes Tessera's data to FILE (scripts/backup-archive.ts), from one snapshot, while the
// service runs. The embedded PostgreSQL is found through its lock file; when Tessera is not running, it is started
// for the backup alone. With DATABASE_URL set, that database is backed up. PostgreSQL's pg_dump is not used: the
// embedded package ships no client tools, and a pg_dump older than the server refuses to dump it.
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { createGzip } from 'node:zlib';
import pg from 'pg';
import { StartupError } from '../prisma/startup-error.ts';
import {
  FORMAT,
  listSequences,
  listTables,
  qualified,
  quoteIdent,
  SESSION_SETTINGS,
  VERSION,
  type Entry,
  type Header,
} from './backup-archive.ts';
import {
  clusterExists,
  databaseSettings,
  runCommand,
  runningServer,
  runningServerUrl,
  startForCommand,
} from './embedded-db.ts';

const FETCH_ROWS = 1000;

function fileArgument(): string {
  let positionals: string[];
  try {
    ({ positionals } = parseArgs({ allowPositionals: true, options: {} }));
  } catch (error) {
    throw new StartupError(`${(error as Error).message}; usage: npm run db:backup -- FILE`);
  }
  const [file, ...more] = positionals;
  if (file === undefined || more.length) throw new StartupError('usage: npm run db:backup -- FILE');
  return path.resolve(file);
}

/** The one row of a statement that always answers one (a `show`, a select without a from or a where). */
function onlyRow<R>({ rows: [row] }: { rows: R[] }, statement: string): R {
  if (row === undefined) throw new Error(`${statement} answered no row`);
  return row;
}

/** Writes the backup of `url` to `file` through a `.partial` file renamed at the end: a failed backup leaves no FILE. */
async function dump(url: string, file: string): Promise<{ tables: number; rows: number }> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    throw new StartupError(`cannot connect to the database: ${(error as Error).message}`);
  }
  const partial = `${file}.partial`;
  const gzip = createGzip();
  const written = pipeline(gzip, createWriteStream(partial, { mode: 0o600 }));
  written.catch(() => {}); // awaited below; an early failure also rejects the writes
  const write = async (entry: Header | Entry) => {
    if (!gzip.write(`${JSON.stringify(entry)}\n`)) await Promise.race([once(gzip, 'drain'), written]);
  };
  try {
    // One snapshot for every table, as pg_dump takes: rows that refer to each other are consistent.
    await client.query('begin isolation level repeatable read, read only');
    await client.query(SESSION_SETTINGS);
    const bookkept = `select to_regclass('public._prisma_migrations') is not null as found`;
    if (!onlyRow(await client.query<{ found: boolean }>(bookkept), bookkept).found)
      throw new StartupError('the database has no Tessera migrations applied: nothing to back up');
    const migrations = await client.query<{ migration_name: string }>(
      'select migration_name from "_prisma_migrations" where finished_at is not null and rolled_back_at is null order by migration_name',
    );
    const version = onlyRow(
      await client.query<{ server_version: string }>('show server_version'),
      'show server_version',
    );
    await write({
      format: FORMAT,
      version: VERSION,
      createdAt: new Date().toISOString(),
      postgres: version.server_version,
      migrations: migrations.rows.map((r) => r.migration_name),
    });
    const tables = await listTables(client);
    let rows = 0;
    for (const table of tables) {
      await write({ table: table.name, columns: table.columns });
      const select = table.columns.map((c) => `${quoteIdent(c)}::text`).join(', ');
      await client.query(
        `declare backup_rows no scroll cursor for select ${select} from only ${qualified(table.name)}`,
      );
      for (;;) {
        const batch = await client.query<(string | null)[]>({
          text: `fetch forward ${FETCH_ROWS} from backup_rows`,
          rowMode: 'array',
        });
        for (const row of batch.rows) await write(row);
        rows += batch.rows.length;
        if (batch.rows.length < FETCH_ROWS) break;
      }
      await client.query('close backup_rows');
    }
    for (const sequence of await listSequences(client)) {
      const statement = `select last_value::text as value, is_called as called from ${qualified(sequence)}`;
      const state = onlyRow(await client.query<{ value: string; called: boolean }>(statement), statement);
      await write({ sequence, value: state.value, called: state.called });
    }
    await write({ end: { tables: tables.length, rows } });
    await client.query('commit');
    gzip.end();
    await written;
    await rename(partial, file);
    return { tables: tables.length, rows };
  } catch (error) {
    gzip.destroy();
    await written.catch(() => {});
    await rm(partial, { force: true });
    throw error;
  } finally {
    await client.end().catch(() => {});
  }
}

await runCommand('db:backup', async () => {
  const file = fileArgument();
  const { databaseUrl, dataDir, secretKeySet } = databaseSettings();
  let url = databaseUrl;
  let started: Awaited<ReturnType<typeof startForCommand>> | undefined;
  if (!url) {
    const running = await runningServer(dataDir);
    if (running) {
      url = await runningServerUrl(dataDir, running.port);
    } else if (await clusterExists(dataDir)) {
      console.error(`Tessera is not running on ${dataDir}: starting its embedded PostgreSQL for the backup`);
      started = await startForCommand(dataDir);
      url = started.url;
    } else {
      throw new StartupError(
        `there is no embedded database in ${dataDir}: set DATA_DIR to the one Tessera uses (or DATABASE_URL)`,
      );
    }
  }
  try {
    const { tables, rows } = await dump(url, file);
    console.log(`backed up ${rows} rows of ${tables} tables to ${file}`);
  } finally {
    await started?.stop();
  }
  // The key itself is never printed: it belongs apart from the backups.
  const key = secretKeySet
    ? 'the SECRET_KEY this service runs with'
    : `${path.join(dataDir, 'secret.key')} (the SECRET_KEY this service runs with)`;
  console.log(
    `This backup is useless without the same SECRET_KEY: signing keys and webhook secrets in it are encrypted with it. Keep ${key} safe too, stored apart from the backup.`,
  );
});
