// `npm run db:migrate`: apply the committed migrations to WORKER_DATABASE_URL or DATABASE_URL (or the embedded
// database) and exit. The migrations hold an advisory lock, which needs a direct connection, not a pooled one.
import path from 'node:path';
import { loadConfig } from '../server/config.ts';
import { migrate } from '../prisma/migrate.ts';
import { databaseForCommand } from './embedded-db.ts';

const config = await loadConfig();
const database = await databaseForCommand(config.databaseUrl, path.join(config.dataDir), console.log);
const applied = await migrate(config.workerDatabaseUrl ?? database.url, console.log);
console.log(applied.length ? `applied ${applied.length} migration(s)` : 'the database is up to date');
await database.stop();
