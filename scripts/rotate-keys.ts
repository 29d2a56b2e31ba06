// `npm run keys:rotate`: adds a new current signing key for each algorithm. JWKS keeps the previous keys,
// so tokens signed before the rotation keep verifying; every API process picks the new key up within a minute.
import path from 'node:path';
import { loadConfig } from '../server/config.ts';
import { migrate } from '../prisma/migrate.ts';
import { createDb } from '../schema/db.ts';
import { KeyStore } from '../schema/keys/signing-keys.ts';
import { databaseForCommand } from './embedded-db.ts';

const config = await loadConfig();
const database = await databaseForCommand(config.databaseUrl, path.join(config.dataDir), () => {});
await migrate(config.workerDatabaseUrl ?? database.url);
const db = createDb(database.url, { maxConnections: 2 });
const keys = new KeyStore(db, config.secretKey);
await keys.init();
const kids = await keys.rotate();
console.log(`new signing keys: ${kids.join(', ')}`);
await db.$disconnect();
await database.stop();
