// What directory groups give (docs/architecture.md#directory-provisioning): a group mapped to a role gives its members
// that role (the highest of their role groups; `member` without one, once the organization maps any role), a group
// mapped to a subscription gives each member a seat, never beyond total_seats, and leaving it frees the seat.
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { UserError } from '../../errors/index.ts';
import { highestRole } from '../../auth/roles.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { applyRoleFromUpstream } from '../members/members.service.ts';
import { freeSeat, takeSeat } from '../subscriptions/seats.service.ts';
import { ScimNoSeatError } from './directory.errors.ts';

type Tx = Prisma.TransactionClient;

export interface GroupMoves {
  /** Display names of groups the users just left: their seats go, unless another of their groups gives the same. */
  left?: string[];
  /**
   * A seat that cannot be given: `fail` refuses the whole request (a group change, reported to the directory);
   * `audit` lets the rest happen and leaves the refusal in the audit log (a person activated again).
   */
  seatRefusal: 'fail' | 'audit';
}

/** Applies the organization's group mappings to these people (their accounts' ids), active members only. */
export async function followGroups(
  ctx: Context,
  tx: Tx,
  organizationId: string,
  userIds: string[],
  moves: GroupMoves = { seatRefusal: 'audit' },
) {
  if (!userIds.length) return;
  const mappings = await tx.directoryGroupMapping.findMany({
    where: { organizationId },
    orderBy: { createdAt: 'asc' },
  });
  if (!mappings.length) return;
  const people = await tx.scimUser.findMany({
    where: { organizationId, userId: { in: userIds }, active: true },
    select: { userId: true, groups: { select: { group: { select: { displayName: true } } } } },
  });
  const left = new Set((moves.left ?? []).map((n) => n.toLowerCase()));
  const mapsRoles = mappings.some((m) => m.role);
  for (const person of people) {
    const names = new Set(person.groups.map((g) => g.group.displayName.toLowerCase()));
    const mine = mappings.filter((m) => names.has(m.groupName.toLowerCase()));
    if (mapsRoles)
      await applyRoleFromUpstream(
        ctx,
        tx,
        organizationId,
        person.userId,
        highestRole(mine.flatMap((m) => (m.role ? [m.role] : []))) ?? 'member',
        'scim',
      );
    for (const subscriptionId of new Set(mine.flatMap((m) => (m.subscriptionId ? [m.subscriptionId] : [])))) {
      await seat(ctx, tx, { organizationId, subscriptionId, userId: person.userId }, moves.seatRefusal);
    }
    const gone = mappings.flatMap((m) =>
      m.subscriptionId &&
      left.has(m.groupName.toLowerCase()) &&
      !mine.some((k) => k.subscriptionId === m.subscriptionId)
        ? [m.subscriptionId]
        : [],
    );
    for (const subscriptionId of new Set(gone)) {
      await freeSeat(ctx, tx, { organizationId, subscriptionId, userId: person.userId }, 'scim');
    }
  }
}

/** A seat of the subscription, unless the person has one. */
async function seat(
  ctx: Context,
  tx: Tx,
  wanted: { organizationId: string; subscriptionId: string; userId: string },
  refusal: GroupMoves['seatRefusal'],
) {
  if (
    await tx.seatAssignment.findUnique({
      where: { subscriptionId_userId: { subscriptionId: wanted.subscriptionId, userId: wanted.userId } },
      select: { id: true },
    })
  )
    return;
  try {
    await takeSeat(ctx, tx, wanted, 'scim');
  } catch (error) {
    // A refusal is a row count or a status read, no failed statement: the transaction can go on.
    if (!(error instanceof UserError)) throw error;
    if (refusal === 'fail') throw new ScimNoSeatError(error.message, wanted);
    await recordSeatRefusal(ctx, wanted, error.message, tx);
  }
}

/** The admins see in the audit log why a member got no seat. */
export function recordSeatRefusal(
  ctx: Context,
  wanted: { organizationId: string; subscriptionId: string; userId: string },
  message: string,
  tx?: Tx,
) {
  return recordAudit(
    ctx,
    {
      action: 'subscription.seat.assign',
      outcome: 'failure',
      organizationId: wanted.organizationId,
      targetType: 'subscription',
      targetId: wanted.subscriptionId,
      details: { userId: wanted.userId, via: 'scim', reason: 'no_seat', message },
    },
    tx,
  );
}
