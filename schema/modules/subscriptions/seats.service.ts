// Seats: an organization's admins give a subscription's seats to its members. Assigned seats never exceed
// total_seats: every assignment takes the subscription's row lock, then counts and inserts in one conditional
// statement, so concurrent assignments take turns and the count each sees includes the ones before it.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { NotFoundError } from '../../errors/index.ts';
import { requireActor, requireOrgRole } from '../../auth/access.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { lockSubscription } from './subscriptions.service.ts';
import {
  AlreadySeatedError,
  NoSeatLeftError,
  NotAMemberError,
  SubscriptionNotLiveError,
} from './subscriptions.errors.ts';

const seatInput = z.object({ subscriptionId: fields.id, userId: fields.id });

const USER = { select: { id: true, email: true, name: true } } as const;

/** The subscription's organization, once the caller is known to hold `role` there (else 404 or 403). */
async function organizationOf(ctx: Context, subscriptionId: string, role: 'member' | 'admin') {
  requireActor(ctx);
  const row = await ctx.db.subscription.findUnique({ where: { id: subscriptionId }, select: { organizationId: true } });
  if (!row) throw new NotFoundError('Subscription');
  await requireOrgRole(ctx, row.organizationId, role, 'Subscription');
  return row.organizationId;
}

export async function listSeats(ctx: Context, subscriptionId: string, page?: PageInput) {
  const { subscriptionId: id } = parseInput(seatInput.pick({ subscriptionId: true }), { subscriptionId });
  const { limit, args } = paged(page, { subscriptionId: id });
  await organizationOf(ctx, id, 'admin');
  const rows = await ctx.db.seatAssignment.findMany({ ...args, include: { membership: { select: { user: USER } } } });
  return toPage(
    rows.map(({ membership, ...seat }) => ({ ...seat, user: membership.user })),
    limit,
  );
}

export async function assignSeat(ctx: Context, input: unknown) {
  const { subscriptionId, userId } = parseInput(seatInput, input);
  const organizationId = await organizationOf(ctx, subscriptionId, 'admin');
  const seatId = await ctx.db.$transaction((tx) => takeSeat(ctx, tx, { organizationId, subscriptionId, userId }));
  const seat = await ctx.db.seatAssignment.findUniqueOrThrow({
    where: { id: seatId },
    include: { membership: { select: { user: USER } } },
  });
  const { membership, ...rest } = seat;
  return { ...rest, user: membership.user };
}

/**
 * Gives a member a seat of the subscription, in the caller's transaction, never beyond total_seats; the seat's id.
 * Also how a sign-in through a connection seats a person it adds (docs/architecture.md#single-sign-on).
 */
export async function takeSeat(
  ctx: Context,
  tx: Prisma.TransactionClient,
  seat: { organizationId: string; subscriptionId: string; userId: string },
  via?: string,
) {
  const { organizationId, subscriptionId, userId } = seat;
  const now = ctx.clock.now();
  const sub = await lockSubscription(tx, subscriptionId);
  if (sub.status !== 'active' && sub.status !== 'trial') throw new SubscriptionNotLiveError(sub.status);
  // A new statement after the lock: it sees every assignment committed before the lock was ours.
  const [inserted] = await tx.$queryRaw<{ id: string }[]>`
    insert into seat_assignments (id, subscription_id, organization_id, user_id, created_at)
    select ${uuidv7(now.getTime())}, ${subscriptionId}, ${organizationId}, ${userId}, ${now}
    where (select count(*) from seat_assignments where subscription_id = ${subscriptionId}) < ${sub.total_seats}
      and exists (select 1 from memberships where user_id = ${userId} and organization_id = ${organizationId})
    on conflict (subscription_id, user_id) do nothing
    returning id`;
  if (!inserted) {
    const [why] = await tx.$queryRaw<{ member: boolean; seated: boolean }[]>`
      select exists (select 1 from memberships where user_id = ${userId} and organization_id = ${organizationId}) as member,
             exists (select 1 from seat_assignments where subscription_id = ${subscriptionId} and user_id = ${userId}) as seated`;
    // A select without FROM answers one row.
    if (!why) throw new Error('takeSeat: the reason for no seat answered no row');
    if (!why.member) throw new NotAMemberError();
    if (why.seated) throw new AlreadySeatedError();
    throw new NoSeatLeftError(sub.total_seats);
  }
  await recordAudit(
    ctx,
    {
      action: 'subscription.seat.assign',
      organizationId,
      targetType: 'subscription',
      targetId: subscriptionId,
      details: { userId, ...(via ? { via } : {}) },
    },
    tx,
  );
  return inserted.id;
}

export async function unassignSeat(ctx: Context, input: unknown) {
  const { subscriptionId, userId } = parseInput(seatInput, input);
  const organizationId = await organizationOf(ctx, subscriptionId, 'admin');
  await ctx.db.$transaction(async (tx) => {
    if (!(await freeSeat(ctx, tx, { organizationId, subscriptionId, userId }))) throw new NotFoundError('Seat');
  });
  return true;
}

/**
 * Takes a member's seat of the subscription back, in the caller's transaction; whether they had one. Also how
 * leaving a directory group frees the seat it gave (docs/architecture.md#directory-provisioning).
 */
export async function freeSeat(
  ctx: Context,
  tx: Prisma.TransactionClient,
  seat: { organizationId: string; subscriptionId: string; userId: string },
  via?: string,
): Promise<boolean> {
  const { organizationId, subscriptionId, userId } = seat;
  const { count } = await tx.seatAssignment.deleteMany({ where: { subscriptionId, userId } });
  if (!count) return false;
  await recordAudit(
    ctx,
    {
      action: 'subscription.seat.unassign',
      organizationId,
      targetType: 'subscription',
      targetId: subscriptionId,
      details: { userId, ...(via ? { via } : {}) },
    },
    tx,
  );
  return true;
}
