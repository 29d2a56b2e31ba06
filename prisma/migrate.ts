// Applies the committed SQL migrations in order, each in its own transaction, under an advisory lock so that
// several processes starting at once are safe. A migration whose first line is `-- without a transaction` runs its
// statements one by one outside any (CREATE INDEX CONCURRENTLY cannot run inside one): one statement a line, each
// written to be run again (IF NOT EXISTS), since a failure leaves the ones before it applied. Records them in Prisma's own `_prisma_migrations` table, so
// Prisma's tools see the same history.
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { Logger as WorkerLogger, runMigrations as installJobQueue } from 'graphile-worker';
import { StartupError } from './startup-error.ts';

const MIGRATIONS_DIR = path.resolve(import.meta.dirname, 'migrations');
const LOCK_KEY = 7_283_001; // any constant shared by every Tessera process

export async function listMigrations(): Promise<{ name: string; sql: string; checksum: string }[]> {
  const names = (await readdir(MIGRATIONS_DIR, { withFileTypes: true }))
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(path.join(MIGRATIONS_DIR, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

/** A PostgreSQL answers its startup message at once; something else (Redis, say) may never answer at all. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Why the first connection failed, as one line that names the server (never the password) and what to change. */
function connectFailure(databaseUrl: string, error: unknown): StartupError {
  const { code, message } = error as { code?: string; message?: string };
  let where = 'DATABASE_URL';
  let user = '';
  let database = '';
  try {
    const url = new URL(databaseUrl);
    where = `${url.hostname}:${url.port || 5432}`;
    user = decodeURIComponent(url.username);
    database = decodeURIComponent(url.pathname.slice(1));
  } catch {
    // pg parsed it, we could not: keep the generic name
  }
  const reason =
    code === 'ECONNREFUSED'
      ? 'nothing listens there'
      : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
        ? 'no such host'
        : code === '28P01' || code === '28000'
          ? `PostgreSQL refused user "${user}" (${message})`
          : code === '3D000'
            ? `database "${database}" does not exist`
            : /timeout/i.test(message ?? '')
              ? `no PostgreSQL answered within ${CONNECT_TIMEOUT_MS / 1000} s (is that a PostgreSQL server?)`
              : /unexpected message|terminated unexpectedly|ECONNRESET/i.test(`${code} ${message}`)
                ? 'what answered is not PostgreSQL'
                : (message ?? String(error)).split('\n')[0];
  return new StartupError(`cannot use the database at ${where}: ${reason}; check DATABASE_URL`);
}

/**
 * graphile-worker's schema, through a pool of ours that is closed before this returns: with a pool of its own,
 * graphile-worker removes its error handlers without waiting for the pool to close, so a connection that the
 * server ended just then (a database dropped or restarting) raised an unhandled error.
 */
async function installJobQueueWith(databaseUrl: string): Promise<void> {
  const pgPool = new pg.Pool({ connectionString: databaseUrl, max: 1, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  pgPool.on('error', () => {});
  pgPool.on('connect', (client) => client.on('error', () => {}));
  try {
    await installJobQueue({ pgPool, logger: new WorkerLogger(() => () => {}) });
  } finally {
    await pgPool.end();
  }
}

const WITHOUT_TRANSACTION = /^-- without a transaction\s*\n/;

/** The statements of a migration run without a transaction: one a line, comments and blank lines left out. */
const statementsOf = (sql: string) =>
  sql
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('--'));

/**
 * The migrations' lock, asked for again every 100 ms rather than waited for: a process waiting inside
 * pg_advisory_lock holds a snapshot, which CREATE INDEX CONCURRENTLY in the process holding the lock waits to end,
 * and the two would deadlock.
 */
async function takeLock(client: pg.Client): Promise<void> {
  while (!(await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1) as ok', [LOCK_KEY])).rows[0]?.ok)
    await new Promise((resolve) => setTimeout(resolve, 100));
}

/** `options.only`: apply only these migrations (a restore brings an empty database to its backup's schema first). */
export async function migrate(
  databaseUrl: string,
  log: (msg: string) => void = () => {},
  options: { only?: ReadonlySet<string> } = {},
): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    throw connectFailure(databaseUrl, error);
  }
  const applied: string[] = [];
  try {
    await takeLock(client);
    // graphile-worker's schema first: every process (ROLE=api too) enqueues jobs in its own transactions, and our
    // migrations may refer to its functions and types.
    await installJobQueueWith(databaseUrl);
    await client.query(`create table if not exists "_prisma_migrations" (
      id varchar(36) primary key, checksum varchar(64) not null, finished_at timestamptz,
      migration_name varchar(255) not null, logs text, rolled_back_at timestamptz,
      started_at timestamptz not null default now(), applied_steps_count integer not null default 0)`);
    const done = await client.query<{ migration_name: string; checksum: string }>(
      'select migration_name, checksum from "_prisma_migrations" where finished_at is not null and rolled_back_at is null',
    );
    const known = new Map(done.rows.map((r) => [r.migration_name, r.checksum]));
    for (const m of await listMigrations()) {
      if (options.only && !options.only.has(m.name)) continue;
      const previous = known.get(m.name);
      if (previous !== undefined) {
        if (previous !== m.checksum) log(`warning: migration ${m.name} changed after it was applied`);
        continue;
      }
      const record = () =>
        client.query(
          `insert into "_prisma_migrations" (id, checksum, migration_name, finished_at, applied_steps_count)
           values ($1, $2, $3, now(), 1)`,
          [randomUUID(), m.checksum, m.name],
        );
      try {
        if (WITHOUT_TRANSACTION.test(m.sql)) {
          for (const statement of statementsOf(m.sql)) await client.query(statement);
          await record();
        } else {
          await client.query('begin');
          try {
            await client.query(m.sql);
            await record();
            await client.query('commit');
          } catch (error) {
            await client.query('rollback');
            throw error;
          }
        }
      } catch (error) {
        throw new Error(`migration ${m.name} failed: ${(error as Error).message}`, { cause: error });
      }
      log(`applied migration ${m.name}`);
      applied.push(m.name);
    }
  } finally {
    await client.query('select pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    await client.end();
  }
  return applied;
}

/** True when every committed migration has been applied (for /readyz). */
export async function migrationsCurrent(
  query: (sql: string) => Promise<{ migration_name: string }[]>,
): Promise<boolean> {
  const rows = await query(
    'select migration_name from "_prisma_migrations" where finished_at is not null and rolled_back_at is null',
  );
  const applied = new Set(rows.map((r) => r.migration_name));
  return (await listMigrations()).every((m) => applied.has(m.name));
}
