// Writes the SQL of a new migration: the difference between the schema saved with the last migration
// (prisma/migrations/schema.snapshot.prisma) and prisma/schema.prisma, computed by Prisma's wasm schema
// engine (the native one cannot be downloaded here), and the functions and triggers under prisma/sql/ that differ
// from a database the committed migrations make (a scratch one on the server in DATABASE_URL, dropped after).
// Usage: npm run db:diff -- <name>
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import { SchemaEngine } from '@prisma/schema-engine-wasm';
import { migrate } from './migrate.ts';
import { compareWithDatabase, definitionsSql, listSqlFiles } from './sql-definitions.ts';

/** A database that the committed migrations make, on the server in `url`, for `fn` to read; dropped after. */
async function withMigratedDatabase<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const name = `tessera_diff_${randomBytes(6).toString('hex')}`;
  const scratch = new URL(url);
  scratch.pathname = `/${name}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
    try {
      await migrate(scratch.toString());
      const client = new pg.Client({ connectionString: scratch.toString() });
      await client.connect();
      try {
        return await fn(client);
      } finally {
        await client.end();
      }
    } finally {
      await admin.query(`drop database if exists "${name}" with (force)`);
    }
  } finally {
    await admin.end();
  }
}

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: npm run db:diff -- <name_in_snake_case>');
  process.exit(2);
}
const url = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const dir = path.resolve(import.meta.dirname, 'migrations');
const snapshotPath = path.join(dir, 'schema.snapshot.prisma');
const schema = await readFile(path.resolve(import.meta.dirname, 'schema.prisma'), 'utf8');
const snapshot = await readFile(snapshotPath, 'utf8').catch(() => null);

// The engine expects the error-wrapping binding Prisma's CLI puts around a driver adapter.
const factory = bindMigrationAwareSqlAdapterFactory(new PrismaPg({ connectionString: url }));
const engine = await SchemaEngine.new({ datamodels: [['schema.prisma', schema]] }, () => {}, factory);
const result = await engine.diff({
  from:
    snapshot === null
      ? { tag: 'empty' }
      : { tag: 'schemaDatamodel', files: [{ path: 'schema.prisma', content: snapshot }] },
  to: { tag: 'schemaDatamodel', files: [{ path: 'schema.prisma', content: schema }] },
  script: true,
  exitCode: null,
  filters: { externalTables: [], externalEnums: [] },
});
engine.free();
const tables = result.stdout ?? '';
const tablesChanged = tables.trim() !== '' && !/This is an empty migration/.test(tables);

const files = await listSqlFiles();
const differences = await withMigratedDatabase(url, (client) => compareWithDatabase(client, files));
for (const problem of differences.problems) console.log(problem);
const { before, after } = definitionsSql(differences);
const sql = [before, tablesChanged ? tables : '', after].filter((part) => part.trim() !== '').join('\n');
if (!sql) {
  console.log('schema.prisma matches the last migration, and prisma/sql/ the migrated database: nothing to write');
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const target = path.join(dir, `${stamp}_${name}`);
await mkdir(target, { recursive: true });
await writeFile(path.join(target, 'migration.sql'), sql);
await writeFile(snapshotPath, schema);
console.log(`wrote ${path.relative(process.cwd(), target)}/migration.sql`);
