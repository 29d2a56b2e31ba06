// The Prisma client over node-postgres. Imported by services only; everything else asks a service.
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client/client.ts';

export type Db = PrismaClient;
export type { Prisma } from '../prisma/generated/client/client.ts';

export function createDb(databaseUrl: string, maxConnections = 10): Db {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: maxConnections });
  return new PrismaClient({ adapter });
}
