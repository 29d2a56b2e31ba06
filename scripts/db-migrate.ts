// `npm run db:migrate`: apply the committed migrations to WORKER_DATABASE_URL or DATABASE_URL (or the embedded
// database) and exit. The migrations hold an advisory lock, which needs a direct connection, not a pooled one.
import path from 'node:path';
import { loadConfig } from '../server/config.ts';
import { startEmbeddedPostgres } from '../prisma/embedded.ts';
import { migrate } from '../prisma/migrate.ts';

const config = await loadConfig();
const embedded = config.databaseUrl ? undefined : await startEmbeddedPostgres(path.join(config.dataDir), console.log);
const applied = await migrate(config.workerDatabaseUrl ?? config.databaseUrl ?? embedded!.url, console.log);
console.log(applied.length ? `applied ${applied.length} migration(s)` : 'the database is up to date');
await embedded?.stop();
