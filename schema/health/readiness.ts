import type { Db } from '../db.ts';
import { migrationsCurrent } from '../../prisma/migrate.ts';

/** Ready: the database answers and every committed migration is applied. */
export async function readiness(db: Db): Promise<{ ready: boolean; reason?: string }> {
  try {
    const current = await migrationsCurrent((sql) => db.$queryRawUnsafe(sql));
    return current ? { ready: true } : { ready: false, reason: 'migrations pending' };
  } catch {
    return { ready: false, reason: 'database unreachable' };
  }
}
