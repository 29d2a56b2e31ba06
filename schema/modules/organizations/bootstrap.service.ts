// First start: when no user exists yet, create the operator organization and its owner. Idempotent: a
// second start (or a second process starting at the same time) changes nothing.
import type { Db } from '../../db.ts';
import { hashPassword } from '../../lib/crypto.ts';
import { fields } from '../../lib/input.ts';

export interface BootstrapInput {
  email: string;
  password: string;
  orgName: string;
}

const LOCK_KEY = 7_283_002;

export async function bootstrap(
  db: Db,
  input: BootstrapInput | undefined,
): Promise<'created' | 'exists' | 'needs-admin'> {
  const passwordHash = input ? await hashPassword(input.password) : '';
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`select pg_advisory_xact_lock(${LOCK_KEY})`;
    if ((await tx.user.count()) > 0) return 'exists';
    if (!input) return 'needs-admin';
    const email = fields.email.parse(input.email);
    await tx.organization.create({
      data: {
        name: input.orgName,
        isOperator: true,
        memberships: {
          create: {
            role: 'owner',
            user: { create: { email, name: 'Administrator', passwordHash, emailVerified: true } },
          },
        },
      },
    });
    return 'created';
  });
}

/**
 * The operator organization's id, looked up until it exists and then remembered: it never changes, and
 * every authenticated request asks. (A process may start before another one has run the bootstrap.)
 */
export function operatorOrganization(db: Db): () => Promise<string | null> {
  let known: string | null = null;
  return async () => {
    known ??= (await db.organization.findFirst({ where: { isOperator: true }, select: { id: true } }))?.id ?? null;
    return known;
  };
}
