// Writes the SQL of a new migration: the difference between the schema saved with the last migration
// (prisma/migrations/schema.snapshot.prisma) and prisma/schema.prisma, computed by Prisma's wasm schema
// engine (the native one cannot be downloaded here). Usage: npm run db:diff -- <name>
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import { SchemaEngine } from '@prisma/schema-engine-wasm';

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
const sql = result.stdout ?? '';
if (!sql.trim() || /This is an empty migration/.test(sql)) {
  console.log('schema.prisma matches the last migration: nothing to write');
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const target = path.join(dir, `${stamp}_${name}`);
await mkdir(target, { recursive: true });
await writeFile(path.join(target, 'migration.sql'), sql);
await writeFile(snapshotPath, schema);
console.log(`wrote ${path.relative(process.cwd(), target)}/migration.sql`);
