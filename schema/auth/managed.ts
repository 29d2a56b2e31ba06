// Who may act on an account beyond a membership (docs/architecture.md#managed-accounts). An account is one person
// across every organization, and anyone can make an organization, so an organization's powers stop at its own
// membership unless it manages the account: the account's address is in a domain the organization has verified,
// for as long as it stays verified. Services that link, re-address, rename, sign out everywhere, deactivate beyond
// a membership, reset factors or show account-level audit entries ask here, and nowhere else.
import type { Prisma } from '../db.ts';
import { domainOf } from '../lib/email.ts';

type Db = Pick<Prisma.TransactionClient, 'domain'>;

/**
 * The organization that manages the account with `email` (or that would manage a new account with it): the one
 * that verified its domain, or null. At most one can, since a verified domain is unique (a partial index).
 */
export async function managerOf(db: Db, email: string): Promise<string | null> {
  const domain = domainOf(email);
  if (!domain) return null;
  const verified = await db.domain.findFirst({
    where: { domain, verifiedAt: { not: null } },
    select: { organizationId: true },
  });
  return verified?.organizationId ?? null;
}

/** Whether `organizationId` manages the account with `email`. */
export async function manages(db: Db, organizationId: string, email: string): Promise<boolean> {
  return (await managerOf(db, email)) === organizationId;
}

/** For a page of accounts: whether `organizationId` manages each, from one read of its verified domains. */
export async function managedIn(db: Db, organizationId: string): Promise<(email: string) => boolean> {
  const verified = await db.domain.findMany({
    where: { organizationId, verifiedAt: { not: null } },
    select: { domain: true },
  });
  const domains = new Set(verified.map((d) => d.domain));
  return (email) => domains.has(domainOf(email));
}
