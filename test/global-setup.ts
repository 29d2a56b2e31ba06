// Once per `npm test`: find a PostgreSQL (TEST_DATABASE_URL, DATABASE_URL, the local server on 5432, or an
// embedded one when none answers), and migrate a template database that each test file copies.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type RunningDatabase } from '../prisma/embedded.ts';
import { listMigrations, migrate } from '../prisma/migrate.ts';

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

let embedded: RunningDatabase | undefined;
let embeddedDir: string | undefined;

export async function setup(project: TestProject) {
  const candidates = [
    process.env.TEST_DATABASE_URL,
    process.env.DATABASE_URL,
    'postgresql://postgres@127.0.0.1:5432/postgres',
  ].filter(Boolean) as string[];
  let adminUrl: string | undefined;
  for (const url of candidates)
    if (await reachable(url)) {
      adminUrl = url;
      break;
    }
  if (!adminUrl) {
    // A fresh machine without PostgreSQL: the same embedded server `npm start` uses.
    embeddedDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-test-pg-'));
    embedded = await startEmbeddedPostgres(embeddedDir, () => {});
    adminUrl = embedded.url;
  }
  // The template's name follows the migrations, so a changed migration gets a fresh template.
  const digest = createHash('sha256')
    .update((await listMigrations()).map((m) => m.checksum).join())
    .digest('hex')
    .slice(0, 12);
  const template = `tessera_template_${digest}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query('select pg_advisory_lock(7283003)');
  try {
    const exists = await admin.query('select 1 from pg_database where datname = $1', [template]);
    if (exists.rowCount === 0) {
      await admin.query(`create database "${template}_tmp"`).catch(async () => {
        await admin.query(`drop database "${template}_tmp"`);
        await admin.query(`create database "${template}_tmp"`);
      });
      const url = new URL(adminUrl);
      url.pathname = `/${template}_tmp`;
      await migrate(url.toString());
      await admin.query(`alter database "${template}_tmp" rename to "${template}"`);
    }
  } finally {
    await admin.query('select pg_advisory_unlock(7283003)');
    await admin.end();
  }
  project.provide('adminDatabaseUrl', adminUrl);
  project.provide('templateDatabase', template);
}

export async function teardown() {
  await embedded?.stop();
  if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    templateDatabase: string;
  }
}
