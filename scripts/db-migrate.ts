// `npm run db:migrate`: apply the committed migrations to DATABASE_URL (or the embedded database) and exit.
import path from 'node:path';
import { loadConfig } from '../server/config.ts';
import { migrate } from '../prisma/migrate.ts';
import { databaseForCommand } from './embedded-db.ts';

const config = await loadConfig();
const database = await databaseForCommand(config.databaseUrl, path.join(config.dataDir), console.log);
const applied = await migrate(database.url, console.log);
console.log(applied.length ? `applied ${applied.length} migration(s)` : 'the database is up to date');
await database.stop();
