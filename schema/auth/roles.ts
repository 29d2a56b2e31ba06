// The roles of a membership, highest first (docs/architecture.md#tenancy-and-roles). Their names are the data model's
// (enum Role in prisma/schema.prisma); this is where they are ranked, low enough for every layer above to ask.
import type { Role } from '../context.ts';

export const ROLES = ['owner', 'admin', 'member'] as const satisfies readonly Role[];

export const roleAtLeast = (role: Role | null | undefined, min: Role) =>
  !!role && ROLES.indexOf(role) <= ROLES.indexOf(min);

/** The highest of some roles, or null for none. */
export const highestRole = (roles: readonly Role[]): Role | null =>
  roles.reduce<Role | null>((best, r) => (!best || roleAtLeast(r, best) ? r : best), null);
