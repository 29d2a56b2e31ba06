// The file `npm run db:backup` writes and `npm run db:restore` reads: a logical dump of Tessera's data, gzip-compressed
// JSON lines (docs/architecture.md#configuration-and-processes). The schema is not in it: it is the committed
// migrations, and the file names the ones that were applied, so a restore rebuilds exactly that schema and loads the
// rows into it (the next start applies any newer migration to them, as to any database). Values are PostgreSQL's own
// text forms, read back by the columns' own input functions.
//
//   {"format":"tessera-backup","version":1,"createdAt":…,"postgres":"18.1","migrations":[…]}
//   {"table":"public.users","columns":["id","email",…]}   then one line per row: ["0192…","a@b.c",null,…]
//   {"sequence":"graphile_worker._private_jobs_id_seq","value":"42","called":true}
//   {"end":{"tables":31,"rows":1234}}                      absent: the file was cut short
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import readline from 'node:readline';
import { createGunzip } from 'node:zlib';
import type pg from 'pg';
import { StartupError } from '../prisma/startup-error.ts';

export const FORMAT = 'tessera-backup';
export const VERSION = 1;

export interface Header {
  format: typeof FORMAT;
  version: number;
  createdAt: string;
  /** The server's version (SHOW server_version), for the operator's information. */
  postgres: string;
  /** The applied migrations (prisma/migrations folder names), oldest first. */
  migrations: string[];
}
export type Entry =
  | { table: string; columns: string[] }
  | { sequence: string; value: string; called: boolean }
  | { end: { tables: number; rows: number } }
  | (string | null)[];

/** Tessera's data: its own tables and graphile-worker's queue. */
export const SCHEMAS = ['public', 'graphile_worker'];
/** Migration bookkeeping: the restore's migration runs (prisma/migrate.ts) write it anew. */
const BOOKKEEPING = ['public._prisma_migrations', 'graphile_worker.migrations'];

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
/** "schema.name" (as the file names it) quoted for SQL. */
export const qualified = (name: string) => {
  const dot = name.indexOf('.');
  return `${quoteIdent(name.slice(0, dot))}.${quoteIdent(name.slice(dot + 1))}`;
};

/** Set on both sides, so that every value's text form reads back the same (as pg_dump does). */
export const SESSION_SETTINGS = `set datestyle = 'ISO, YMD'; set intervalstyle = 'postgres'; set timezone = 'UTC'; set extra_float_digits = 3; set bytea_output = 'hex'`;

export interface Table {
  name: string;
  /** Stored columns, in order: generated ones are computed again on insert, so neither dumped nor loaded. */
  columns: string[];
}

/** The tables whose rows make Tessera's data (partitions rather than their parents), by name. */
export async function listTables(client: pg.Client): Promise<Table[]> {
  const { rows } = await client.query<Table>(
    `select n.nspname || '.' || c.relname as name,
            array(select a.attname::text from pg_attribute a
                  where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
                  order by a.attnum) as columns
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind = 'r' and n.nspname = any($1) and not (n.nspname || '.' || c.relname) = any($2)
     order by 1`,
    [SCHEMAS, BOOKKEEPING],
  );
  return rows;
}

export async function listSequences(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ name: string }>(
    `select n.nspname || '.' || c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind = 'S' and n.nspname = any($1) order by 1`,
    [SCHEMAS],
  );
  return rows.map((r) => r.name);
}

/** One line for a file that cannot be read as a backup: what it is instead, when we can tell. */
async function checkReadable(file: string): Promise<void> {
  const start = Buffer.alloc(5);
  let bytesRead: number;
  try {
    const handle = await open(file, 'r');
    ({ bytesRead } = await handle.read(start, 0, 5, 0).finally(() => handle.close()));
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    throw new StartupError(code === 'ENOENT' ? `${file} does not exist` : `cannot read ${file} (${code})`);
  }
  if (bytesRead === 0) throw new StartupError(`${file} is empty: not a Tessera backup`);
  if (start.toString('latin1') === 'PGDMP')
    throw new StartupError(`${file} is a pg_dump archive, not a Tessera backup: restore it with pg_restore`);
  if (start[0] !== 0x1f || start[1] !== 0x8b)
    throw new StartupError(`${file} is not a Tessera backup (made by npm run db:backup)`);
}

/**
 * The backup's header, and its entries after it in order. Throws a StartupError (one line) when the file is missing,
 * is not a backup, is damaged, or was cut short (its end line missing or its counts wrong).
 */
export async function openArchive(file: string): Promise<{ header: Header; entries: () => AsyncGenerator<Entry> }> {
  await checkReadable(file);
  const notABackup = () => new StartupError(`${file} is not a Tessera backup (made by npm run db:backup)`);
  async function* lines(): AsyncGenerator<unknown> {
    const gunzip = createGunzip();
    const input = readline.createInterface({ input: createReadStream(file).pipe(gunzip), crlfDelay: Infinity });
    try {
      for await (const line of input) yield JSON.parse(line);
    } catch (error) {
      if (error instanceof SyntaxError || (error as NodeJS.ErrnoException).code?.startsWith('Z_')) {
        throw new StartupError(
          `${file} is damaged (${error instanceof SyntaxError ? 'a line is not JSON' : (error as Error).message}): not a complete Tessera backup`,
        );
      }
      throw error;
    } finally {
      input.close();
      gunzip.destroy();
    }
  }
  let header: Header | undefined;
  try {
    for await (const first of lines()) {
      header = first as Header;
      break;
    }
  } catch (error) {
    if (error instanceof StartupError) throw notABackup();
    throw error;
  }
  if (!header || header.format !== FORMAT || !Array.isArray(header.migrations)) throw notABackup();
  if (header.version > VERSION)
    throw new StartupError(
      `${file} is a backup of format ${header.version}, newer than this Tessera reads (${VERSION}): restore it with a newer Tessera`,
    );
  async function* entries(): AsyncGenerator<Entry> {
    let first = true;
    for await (const entry of lines()) {
      if (first) {
        first = false;
        continue;
      }
      yield entry as Entry;
    }
  }
  return { header, entries };
}

/** Reads the whole file once, before anything is changed: its end line is there and its counts match. */
export async function verifyArchive(
  file: string,
  entries: () => AsyncGenerator<Entry>,
): Promise<{ tables: number; rows: number }> {
  let tables = 0;
  let rows = 0;
  for await (const entry of entries()) {
    if (Array.isArray(entry)) rows++;
    else if ('table' in entry) tables++;
    else if ('end' in entry) {
      if (entry.end.tables !== tables || entry.end.rows !== rows) break;
      return entry.end;
    }
  }
  throw new StartupError(
    `${file} is cut short or damaged (its rows do not add up to its end line): not a complete Tessera backup`,
  );
}
