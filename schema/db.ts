// The Prisma client over node-postgres. Imported by services only; everything else asks a service.
//
// Load must queue, never fail (docs/architecture.md#hot-paths): when every connection is busy a query or a transaction waits for one
// for up to POOL_TIMEOUT_MS, and only then gives up with an error that the HTTP layers answer with 503 and
// Retry-After (errors/unavailable.ts). Prisma's own defaults (2 s to start a transaction, 5 s to finish it) turned
// a short queue into 500s. The pool size and wait can be set in DATABASE_URL with Prisma's usual parameters,
// `connection_limit` and `pool_timeout` (seconds).
import { createHash } from 'node:crypto';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { Prisma, PrismaClient } from '../prisma/generated/client/client.ts';

export type Db = PrismaClient;
// A value too: Prisma.sql composes the raw statements of the hot paths.
export { Prisma };

const DEFAULT_CONNECTIONS = 10;
/** How long a request may wait for a free connection before it is answered 503 (queueing, not failing). */
const POOL_TIMEOUT_MS = 15_000;
/** How long an interactive transaction may take once it has its connection. */
const TRANSACTION_TIMEOUT_MS = 15_000;

/** How many distinct statement texts are kept prepared; texts beyond these run unnamed, as before. */
const MAX_PREPARED = 1000;

/**
 * Names a statement that has parameters by a hash of its text, so node-postgres prepares it once per connection and
 * PostgreSQL parses and plans it once instead of on every request: the CTE statements of the hot paths are large,
 * and planning them cost more than running them. The texts of the code are few (values always travel as
 * parameters); the cap bounds what an unforeseen variety of texts could hold on each connection. The one namer of
 * the process: Prisma's statements, the hot statements and the worker's attempt statements (pgSql,
 * schema/push/signed-attempt.ts) are named by it.
 */
const names = new Map<string, string>();
export function statementName(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < MAX_PREPARED) {
    name = `t_${createHash('sha1').update(text).digest('base64url')}`;
    names.set(text, name);
  }
  return name;
}
const statementNamer =
  () =>
  (query: { sql: string; args: unknown[] }): string =>
    (query.args.length ? statementName(query.sql) : undefined) as string;

// `timestamp` columns hold UTC (Prisma writes and reads them so): read them as UTC whatever the process's zone.
const UTC_TIMESTAMP = 1114;
const parseUtcTimestamp = (value: string) => new Date(`${value.replace(' ', 'T')}Z`);
const hotTypes = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === UTC_TIMESTAMP && format !== 'binary'
      ? parseUtcTimestamp
      : (pg.types.getTypeParser(oid, format as 'text') as (value: string) => unknown)) as typeof pg.types.getTypeParser,
};

/**
 * Runs one composed statement of a hot path (docs/architecture.md#hot-paths) straight on the pool, prepared by name, and returns its rows.
 * Prisma's raw-query layer costs more CPU per call than the statement itself on these paths. Rows are read as
 * $queryRaw reads them for the types these statements return (text, boolean, int4, timestamp, arrays, jsonb);
 * an int8 or numeric column would come back as a string: cast it in SQL.
 */
export async function hotQuery<T>(db: Db, query: Prisma.Sql): Promise<T[]> {
  const text = query.text;
  return runHot<T>(db, text, statementName(text), query.values.map(wireValue));
}

const PARAM = Symbol('hot statement parameter');
type Slot = { param: string } | { value: unknown };
/**
 * What `build` is given for the values of a hot statement: a placeholder for each, typed as the value it stands for
 * so that the fragments a statement shares with direct calls take either; `build` only passes them into SQL.
 */
export type Placeholders<P> = { readonly [K in keyof P]: P[K] };
const placeholders = <P extends object>() =>
  new Proxy({}, { get: (_, key) => ({ [PARAM]: String(key) }) }) as Placeholders<P>;

/**
 * A hot statement composed once (see hotQuery). `build` writes it with a placeholder for each value (`p.slug`) and
 * must not branch on them; its text, prepared name and where each value goes are worked out at the first call, and
 * a call only fills in the values. Composing the fragments and naming the text on every request cost more CPU
 * than running the statement.
 */
export function hotStatement<P extends object, R>(build: (p: Placeholders<P>) => Prisma.Sql) {
  let compiled: { text: string; name: string | undefined; slots: Slot[] } | undefined;
  return (db: Db, params: P): Promise<R[]> => {
    if (!compiled) {
      const query = build(placeholders<P>());
      const slots = query.values.map((v): Slot =>
        v && typeof v === 'object' && PARAM in v
          ? { param: (v as { [PARAM]: string })[PARAM] }
          : { value: wireValue(v) },
      );
      compiled = { text: query.text, name: statementName(query.text), slots };
    }
    // A value used in several places (the time, an identifier) is converted once.
    const wire: Record<string, unknown> = {};
    for (const key in params) wire[key] = wireValue((params as Record<string, unknown>)[key]);
    const values = compiled.slots.map((slot) => ('param' in slot ? wire[slot.param] : slot.value));
    return runHot<R>(db, compiled.text, compiled.name, values);
  };
}

const wireValue = (v: unknown) => (v instanceof Date ? v.toISOString() : v);

/**
 * A hot statement's text as a reader sees it: each placeholder by its name (`:now`), each constant written out, the
 * blank lines the fragments leave dropped. For the reviewed snapshots of composed statements (a statement is read
 * whole somewhere, test/oauth/token-statements.test.ts); never run.
 */
export function readableStatement<P extends object>(build: (p: Placeholders<P>) => Prisma.Sql): string {
  const query = build(placeholders<P>());
  const literal = (v: unknown): string => {
    if (v && typeof v === 'object' && PARAM in v) return `:${(v as { [PARAM]: string })[PARAM]}`;
    if (Array.isArray(v)) return `array[${v.map(literal).join(', ')}]`;
    if (v === null || typeof v === 'number' || typeof v === 'boolean') return String(v);
    const text = v instanceof Date ? v.toISOString() : typeof v === 'string' ? v : JSON.stringify(v);
    return `'${text.replaceAll("'", "''")}'`;
  };
  return query.text
    .replace(/\$(\d+)/g, (_, n: string) => literal(query.values[Number(n) - 1]))
    .split('\n')
    .map((line) => line.trimEnd())
    .filter(Boolean)
    .join('\n');
}

async function runHot<T>(db: Db, text: string, name: string | undefined, values: unknown[]): Promise<T[]> {
  const pool = pools.get(db);
  if (!pool) throw new Error('hotQuery: not a database made by createDb');
  const result = await pool.query({ name: unnamedPools.has(pool) ? undefined : name, text, values, types: hotTypes });
  return result.rows as T[];
}

type StatementListener = (sql: string) => void;
const listeners = new WeakMap<Db, Set<StatementListener>>();
const pools = new WeakMap<Db, pg.Pool>();
/** The pools whose statements run unnamed (createDb's `preparedStatements: false`). */
const unnamedPools = new WeakSet<pg.Pool>();

/** `connection_limit` and `pool_timeout` read from the URL and removed from it (node-postgres does not know them). */
function poolSettings(databaseUrl: string, maxConnections: number | undefined) {
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    return { connectionString: databaseUrl, max: maxConnections ?? DEFAULT_CONNECTIONS, waitMs: POOL_TIMEOUT_MS };
  }
  const limit = Number(url.searchParams.get('connection_limit') ?? NaN);
  const timeout = Number(url.searchParams.get('pool_timeout') ?? NaN);
  url.searchParams.delete('connection_limit');
  url.searchParams.delete('pool_timeout');
  return {
    connectionString: url.toString(),
    max: Number.isInteger(limit) && limit > 0 ? limit : (maxConnections ?? DEFAULT_CONNECTIONS),
    waitMs: Number.isFinite(timeout) && timeout > 0 ? timeout * 1000 : POOL_TIMEOUT_MS,
  };
}

export interface DbOptions {
  /** Connections in the pool, unless DATABASE_URL's connection_limit says; 10 when neither does. */
  maxConnections?: number;
  /**
   * Prepare statements by name (the default). Off behind PgBouncer in transaction mode before 1.21, which keeps no
   * prepared statement across transactions: a name prepared on one server connection is unknown on the next.
   */
  preparedStatements?: boolean;
}

export function createDb(databaseUrl: string, { maxConnections, preparedStatements = true }: DbOptions = {}): Db {
  const settings = poolSettings(databaseUrl, maxConnections);
  const statements = new Set<StatementListener>();
  // Every statement of the process goes through one pg.Client method: the place to count round trips.
  class CountingClient extends pg.Client {
    // pg.Client's query has seven overloads (promise, callback, submittable) and this passes every call on as it
    // came: only `any` is a return type that each of them accepts.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    override query(...args: unknown[]): any {
      if (statements.size) {
        const first = args[0] as string | { text?: string };
        const sql = typeof first === 'string' ? first : (first?.text ?? '');
        for (const listener of statements) listener(sql);
      }
      return (super.query as (...a: unknown[]) => unknown)(...args);
    }
  }
  const pool = new pg.Pool({
    connectionString: settings.connectionString,
    max: settings.max,
    connectionTimeoutMillis: settings.waitMs,
    Client: CountingClient,
  });
  // An idle connection that PostgreSQL closes (a restart) is dropped from the pool, not thrown.
  pool.on('error', () => {});
  if (!preparedStatements) unnamedPools.add(pool);
  // Without a name generator Prisma's adapter prepares nothing by name.
  const adapter = new PrismaPg(pool, {
    disposeExternalPool: true,
    ...(preparedStatements ? { statementNameGenerator: statementNamer() } : {}),
  });
  const db = new PrismaClient({
    adapter,
    // maxWait a little past the pool's own wait, so the pool's clearer error is the one seen.
    transactionOptions: { maxWait: settings.waitMs + 1_000, timeout: TRANSACTION_TIMEOUT_MS },
  });
  listeners.set(db, statements);
  pools.set(db, pool);
  return db;
}

/** Calls `listener` with the text of every statement `db` sends until the returned function is called. */
export function onStatement(db: Db, listener: StatementListener): () => void {
  const set = listeners.get(db);
  if (!set) throw new Error('onStatement: not a database made by createDb');
  set.add(listener);
  return () => set.delete(listener);
}

/** A write refused by a unique constraint (Prisma's P2002): the service says which rule it broke. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'P2002';
}

/** The connections of `db`'s pool: open, idle, and requests waiting for one (for the metrics). */
export function poolStats(db: Db): { total: number; idle: number; waiting: number } {
  const pool = pools.get(db);
  return pool
    ? { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }
    : { total: 0, idle: 0, waiting: 0 };
}
