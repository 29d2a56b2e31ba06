// The database's own code, its functions and triggers, has one current home: the files under prisma/sql/ (one per
// function, with the triggers that call it). The migrations that landed are its history, which no one reads to learn
// what is in force. This compares those files with a migrated database, for the test that keeps them in step and for
// `npm run db:diff`, which writes what differs into the next migration (docs/architecture.md#where-things-go).
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';

export const SQL_DIR = path.resolve(import.meta.dirname, 'sql');

export interface SqlFile {
  name: string;
  sql: string;
}

export async function listSqlFiles(): Promise<SqlFile[]> {
  const names = (await readdir(SQL_DIR)).filter((name) => name.endsWith('.sql')).sort();
  return Promise.all(names.map(async (name) => ({ name, sql: await readFile(path.join(SQL_DIR, name), 'utf8') })));
}

/** A function or trigger of the schema, as PostgreSQL prints it back: the same text however it was written. */
interface Definition {
  key: string;
  definition: string;
  drop: string;
  /** What CREATE OR REPLACE FUNCTION cannot change: the result type and the parameters' names. */
  shape: string;
}

// The schema's own objects only: not graphile-worker's schema, nor an extension's functions. Aggregates are left
// out, as pg_get_functiondef cannot print them. Triggers sort first, so that dropping them all comes before their
// functions.
const DEFINITIONS = `
  select 'trigger ' || quote_ident(t.tgname) || ' on ' || t.tgrelid::regclass::text as key,
         pg_get_triggerdef(t.oid) as definition,
         'DROP TRIGGER ' || quote_ident(t.tgname) || ' ON ' || t.tgrelid::regclass::text || ';' as drop,
         '' as shape, 0 as rank
  from pg_trigger t join pg_class c on c.oid = t.tgrelid
  where c.relnamespace = 'public'::regnamespace and not t.tgisinternal
  union all
  select 'function ' || p.oid::regprocedure::text,
         pg_get_functiondef(p.oid),
         'DROP ' || case p.prokind when 'p' then 'PROCEDURE ' else 'FUNCTION ' end || p.oid::regprocedure::text || ';',
         pg_get_function_result(p.oid) || ' ' || coalesce(array_to_string(p.proargnames, ','), ''), 1
  from pg_proc p
  where p.pronamespace = 'public'::regnamespace and p.prokind in ('f', 'p')
    and not exists (select 1 from pg_depend d
                    where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
  order by rank, key`;

async function readDefinitions(client: pg.Client): Promise<Map<string, Definition>> {
  const { rows } = await client.query<Definition>(DEFINITIONS);
  return new Map(rows.map((row) => [row.key, row]));
}

export interface Differences {
  /** One line per difference, for a reader. Empty when the files and the database agree. */
  problems: string[];
  /** Files that define something the database lacks or has otherwise, in name order: their SQL is what to run. */
  stale: SqlFile[];
  /**
   * What to drop first: what the database has and no file defines, and the functions whose result type or
   * parameter names a file changes (CREATE OR REPLACE cannot).
   */
  drops: string[];
}

/**
 * Each file's definitions are read back from the database itself: inside a transaction that is rolled back, every
 * function and trigger of the schema is dropped, then the files run one by one, so what each file defines is what
 * appeared after it. The database is left as it was.
 */
export async function compareWithDatabase(client: pg.Client, files: SqlFile[]): Promise<Differences> {
  const problems: string[] = [];
  const fromFiles = new Map<string, { file: SqlFile; definition: Definition }>();
  let inDatabase: Map<string, Definition>;
  await client.query('begin');
  try {
    inDatabase = await readDefinitions(client);
    // IF EXISTS: a SQL function with a BEGIN ATOMIC body depends on what it calls, and goes with it.
    for (const { drop } of inDatabase.values())
      await client.query(drop.replace(/^DROP (\w+) /, 'DROP $1 IF EXISTS ').replace(/;$/, ' CASCADE;'));
    let before = new Map<string, Definition>();
    for (const file of files) {
      await client.query(file.sql).catch((error: unknown) => {
        throw new Error(`prisma/sql/${file.name}: ${(error as Error).message}`, { cause: error });
      });
      const after = await readDefinitions(client);
      const defined = [...after.values()].filter((d) => !before.has(d.key));
      if (defined.length === 0) problems.push(`prisma/sql/${file.name} defines no function or trigger of its own`);
      for (const definition of defined) fromFiles.set(definition.key, { file, definition });
      before = after;
    }
  } finally {
    await client.query('rollback');
  }
  const stale = new Set<SqlFile>();
  for (const [key, { file, definition }] of fromFiles) {
    const current = inDatabase.get(key);
    if (current?.definition === definition.definition) continue;
    stale.add(file);
    problems.push(`prisma/sql/${file.name}: ${key} ${current ? 'differs from' : 'is not in'} the migrated database`);
  }
  // In the database's order, triggers first: a function is dropped after the triggers that call it.
  const drops: string[] = [];
  for (const [key, current] of inDatabase) {
    const wanted = fromFiles.get(key)?.definition;
    if (!wanted) problems.push(`${key} is in the migrated database but in no file under prisma/sql/`);
    if (!wanted || wanted.shape !== current.shape) drops.push(current.drop);
  }
  return { problems, stale: files.filter((file) => stale.has(file)), drops };
}

/**
 * The migration's part for functions and triggers: the drops go before the tables' changes (a trigger is dropped
 * while its table still exists), the files after them (a trigger needs its table, a SQL function the tables it
 * reads).
 */
export function definitionsSql({ stale, drops }: Differences): { before: string; after: string } {
  return {
    before: drops.map((drop) => `${drop}\n`).join(''),
    after: stale.map((file) => `-- prisma/sql/${file.name}\n${file.sql.trimEnd()}\n`).join('\n'),
  };
}
