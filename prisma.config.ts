import path from 'node:path';
import { defineConfig } from 'prisma/config';

// The native schema engine cannot be downloaded here and is never needed (migrations are SQL, applied by
// prisma/migrate.ts); the stub explains that if a Prisma command reaches for it.
process.env.PRISMA_SCHEMA_ENGINE_BINARY ??= path.resolve(import.meta.dirname, 'scripts/no-schema-engine.sh');
process.env.CHECKPOINT_DISABLE ??= '1';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost/tessera' },
});
