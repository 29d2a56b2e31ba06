// The Prisma client over node-postgres. Imported by services only; everything else asks a service.
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../prisma/generated/client/client.ts';

export type Db = PrismaClient;
export type { Prisma } from '../prisma/generated/client/client.ts';

export function createDb(databaseUrl: string, maxConnections = 10): Db {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: maxConnections });
  return new PrismaClient({ adapter });
}

/** A write refused by a unique constraint (Prisma's P2002): the service says which rule it broke. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'P2002';
}
