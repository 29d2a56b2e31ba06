// Memberships: roles within an organization. Owners can do everything; admins manage members and admins but
// never owners; every organization keeps at least one owner.
import { z } from 'zod';
import type { Context, Role } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { NotFoundError } from '../../errors/index.ts';
import { LastOwnerError, OwnerOnlyError, RoleAboveYoursError, TransferToSelfError } from './members.errors.ts';
import {
  forgetMemberships,
  hasSecondFactor as hasSecondFactorOf,
  isPlatformAdmin,
  requireOrgRole,
} from '../../auth/access.ts';
import { roleAtLeast } from '../../auth/roles.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { emitEvents, emitUserEvent } from '../../events/emit.ts';
import { managedIn } from '../../auth/managed.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { apiKeysFollowCreator } from '../api-keys/api-keys.service.ts';
import { revokeGrants } from '../oauth/revocation.service.ts';

type Tx = Prisma.TransactionClient;

export async function listMembers(ctx: Context, organizationId: string, page?: PageInput) {
  await requireOrgRole(ctx, organizationId, 'admin');
  const { limit, args } = paged(page, { organizationId });
  return toPage(await ctx.db.membership.findMany({ ...args, include: { user: { include: FACTORS } } }), limit);
}

/** What says whether a person has a second factor, read with the members list. */
const FACTORS = { totpFactor: { select: { confirmedAt: true } }, _count: { select: { passkeys: true } } } as const;

type WithFactors = {
  userId: string;
  user?: { totpFactor?: { confirmedAt: Date | null } | null; _count?: { passkeys: number } };
};

/** Whether the member has a second factor: from the list's own read, or looked up for a single membership. */
export async function hasSecondFactor(ctx: Context, m: WithFactors): Promise<boolean> {
  if (!m.user?._count) return hasSecondFactorOf(ctx, m.userId);
  return !!m.user.totpFactor?.confirmedAt || m.user._count.passkeys > 0;
}

/**
 * Whether the organization manages the member's account (docs/architecture.md#managed-accounts), its verified
 * domains read once per request and organization.
 */
export async function isManagedMember(
  ctx: Context,
  m: { organizationId: string; userId: string; user?: { email: string } },
): Promise<boolean> {
  const key = `managedIn:${m.organizationId}`;
  let test = ctx.cache.get(key) as Promise<(email: string) => boolean> | undefined;
  if (!test) ctx.cache.set(key, (test = managedIn(ctx.db, m.organizationId)));
  const email =
    m.user?.email ?? (await ctx.db.user.findUniqueOrThrow({ where: { id: m.userId }, select: { email: true } })).email;
  return (await test)(email);
}

/**
 * Membership changes of one organization take turns: without this, two owners stepping down at once each see
 * the other still owner, and both succeed. Taken before the membership is read, so the reads see the winner.
 * NO KEY UPDATE, not UPDATE: it does not wait for the key-share locks that inserting a membership (or an event)
 * takes on the organization's row, so a transaction that added someone and then takes this lock cannot deadlock
 * with another doing the same (a directory creating 50 people at once did).
 */
async function lockMemberships(tx: Tx, organizationId: string) {
  await tx.$executeRaw`select 1 from organizations where id = ${organizationId} for no key update`;
}

async function findMembership(tx: Tx, organizationId: string, userId: string) {
  const m = await tx.membership.findUnique({
    where: { userId_organizationId: { userId, organizationId } },
    include: {
      user: { select: { id: true, email: true, name: true } },
      organization: { select: { id: true, name: true } },
    },
  });
  if (!m) throw new NotFoundError('Member');
  return m;
}

async function assertKeepsAnOwner(tx: Tx, organizationId: string, leavingOwnerId: string) {
  const others = await tx.membership.count({
    where: { organizationId, role: 'owner', userId: { not: leavingOwnerId } },
  });
  if (others === 0) throw new LastOwnerError();
}

/**
 * A membership ends everything issued for it, at once (docs/architecture.md#tenancy-and-roles), like a password
 * change does: the user's grants to the organization's OAuth clients (their access and refresh tokens and pending
 * codes with them) and the remembered consents, the API keys it made there, and the organization its sessions act
 * in. Runs in the transaction that removes the member or deletes the account, before the rows go.
 */
export async function endMembership(
  ctx: Context,
  tx: Tx,
  organization: { id: string; name: string },
  userId: string,
  reason: 'creator_left' | 'creator_deleted',
) {
  await revokeGrants(ctx, tx, { userId, client: { organizationId: organization.id } });
  await tx.oAuthConsent.deleteMany({ where: { userId, client: { organizationId: organization.id } } });
  // A session is the person's, not the membership's: it stays signed in, acting in no organization.
  await tx.session.updateMany({ where: { userId, organizationId: organization.id }, data: { organizationId: null } });
  await apiKeysFollowCreator(ctx, tx, organization, userId, null, reason);
}

/** Admins may act on members and admins; only owners act on owners or make owners. */
function assertMayManage(callerRole: Role, targetRole: Role, newRole?: Role) {
  if (targetRole === 'owner' && callerRole !== 'owner') throw new OwnerOnlyError();
  if (newRole && !roleAtLeast(callerRole, newRole)) throw new RoleAboveYoursError('grant');
}

const roleInput = z.object({ role: fields.role }).strict();

type FoundMembership = Awaited<ReturnType<typeof findMembership>>;

/** Gives `m` a new role, with its events and audit entry; the API keys its user made there follow it down. */
async function setRole(ctx: Context, tx: Tx, m: FoundMembership, role: Role) {
  await tx.membership.update({ where: { id: m.id }, data: { role } });
  await emitEvents(
    tx,
    ['member.role.changed', 'organization.member.role_changed'],
    m.organization,
    { organization: m.organization, user: m.user, role, previousRole: m.role },
    { at: ctx.clock.now() },
  );
  await recordAudit(
    ctx,
    {
      action: 'member.role.change',
      organizationId: m.organizationId,
      targetType: 'user',
      targetId: m.userId,
      details: { from: m.role, to: role },
    },
    tx,
  );
  await apiKeysFollowCreator(ctx, tx, m.organization, m.userId, role, 'creator_demoted');
}

export async function changeMemberRole(ctx: Context, organizationId: string, userId: string, input: unknown) {
  const callerRole = await requireOrgRole(ctx, organizationId, 'admin');
  const { role } = parseInput(roleInput, input);
  const updated = await ctx.db.$transaction(async (tx) => {
    await lockMemberships(tx, organizationId);
    const m = await findMembership(tx, organizationId, userId);
    assertMayManage(callerRole, m.role, role);
    if (m.role === role) return m;
    if (m.role === 'owner') await assertKeepsAnOwner(tx, organizationId, userId);
    await setRole(ctx, tx, m, role);
    return m;
  });
  forgetMemberships(ctx);
  return ctx.db.membership.findUniqueOrThrow({ where: { id: updated.id }, include: { user: true } });
}

const transferInput = z
  .object({
    stepDown: z
      .boolean({ message: 'must be true or false' })
      .nullish()
      .transform((v) => v ?? true),
  })
  .strict();

/**
 * Makes the member `toUserId` an owner and, unless `stepDown` is false, the calling owner an admin: one
 * transaction on the organization's row lock, the new owner first, so the organization never lacks one. Only
 * owners transfer (platform admins act as owners, and one who is not a member has nobody to step down). The
 * caller's role is read again under the lock: of two transfers at once by the same owner, the second finds it
 * an admin already and is refused.
 */
export async function transferOwnership(ctx: Context, organizationId: string, toUserId: string, options: unknown = {}) {
  const callerRole = await requireOrgRole(ctx, organizationId, 'admin');
  if (callerRole !== 'owner') throw new OwnerOnlyError();
  const { userId } = parseInput(z.object({ userId: fields.id }), { userId: toUserId });
  const { stepDown } = parseInput(transferInput, options);
  // An API key acts for no one: its role decided above, and nobody steps down.
  const callerId = ctx.actor?.kind !== 'apiKey' ? (ctx.actor?.userId ?? null) : null;
  if (callerId === userId) throw new TransferToSelfError();
  const platformAdmin = await isPlatformAdmin(ctx);
  await ctx.db.$transaction(async (tx) => {
    await lockMemberships(tx, organizationId);
    const caller = callerId
      ? await tx.membership.findUnique({
          where: { userId_organizationId: { userId: callerId, organizationId } },
          include: {
            user: { select: { id: true, email: true, name: true } },
            organization: { select: { id: true, name: true } },
          },
        })
      : null;
    if (callerId && caller?.role !== 'owner' && !platformAdmin) throw new OwnerOnlyError();
    const next = await findMembership(tx, organizationId, userId);
    if (next.role !== 'owner') await setRole(ctx, tx, next, 'owner');
    const steppedDown = stepDown && caller?.role === 'owner';
    if (steppedDown) await setRole(ctx, tx, caller, 'admin');
    await recordAudit(
      ctx,
      {
        action: 'member.ownership.transfer',
        organizationId,
        targetType: 'user',
        targetId: userId,
        details: { from: callerId, previousRole: next.role, steppedDown },
      },
      tx,
    );
  });
  forgetMemberships(ctx);
  return ctx.db.membership.findUniqueOrThrow({
    where: { userId_organizationId: { userId, organizationId } },
    include: { user: true },
  });
}

export async function removeMember(ctx: Context, organizationId: string, userId: string) {
  const actor = ctx.actor;
  const leaving = actor?.kind !== 'apiKey' && actor?.userId === userId;
  const callerRole = await requireOrgRole(ctx, organizationId, leaving ? 'member' : 'admin');
  await ctx.db.$transaction(async (tx) => {
    await lockMemberships(tx, organizationId);
    const m = await findMembership(tx, organizationId, userId);
    if (!leaving) assertMayManage(callerRole, m.role);
    await dismiss(ctx, tx, m);
  });
  forgetMemberships(ctx);
  return true;
}

/** Ends a membership, keeping an owner: the events, the audit entry, and everything issued for it. */
async function dismiss(ctx: Context, tx: Tx, m: FoundMembership, details?: Record<string, unknown>) {
  if (m.role === 'owner') await assertKeepsAnOwner(tx, m.organizationId, m.userId);
  await tx.membership.delete({ where: { id: m.id } });
  await emitEvents(
    tx,
    ['member.removed', 'organization.member.removed'],
    m.organization,
    { organization: m.organization, user: m.user, role: m.role },
    { at: ctx.clock.now() },
  );
  await recordAudit(
    ctx,
    {
      action: 'member.remove',
      organizationId: m.organizationId,
      targetType: 'user',
      targetId: m.userId,
      ...(details ? { details } : {}),
    },
    tx,
  );
  await endMembership(ctx, tx, m.organization, m.userId, 'creator_left');
}

/**
 * Removes a person on the word of the organization's directory (docs/architecture.md#directory-provisioning), in the
 * caller's transaction, as an admin's removal does; false when they were no member. The last owner stays
 * (LastOwnerError).
 */
export async function dismissMember(
  ctx: Context,
  tx: Tx,
  organizationId: string,
  userId: string,
  via: string,
): Promise<boolean> {
  await lockMemberships(tx, organizationId);
  const m = await tx.membership.findUnique({
    where: { userId_organizationId: { userId, organizationId } },
    include: {
      user: { select: { id: true, email: true, name: true } },
      organization: { select: { id: true, name: true } },
    },
  });
  if (!m) return false;
  await dismiss(ctx, tx, m, { via });
  return true;
}

/**
 * Adds a person to an organization on the word of its identity provider or directory (docs/architecture.md#single-sign-on),
 * in the caller's transaction, with the events and audit entry an accepted invitation gives. `created`: the account
 * is new, so user.created goes out once it belongs to the organization.
 */
export async function admitMember(
  ctx: Context,
  tx: Tx,
  organization: { id: string; name: string },
  userId: string,
  role: Role,
  source: { via: string; connectionId?: string; created: boolean },
) {
  await tx.membership.create({ data: { userId, organizationId: organization.id, role } });
  const user = await tx.user.findUniqueOrThrow({ where: { id: userId } });
  const at = { at: ctx.clock.now() };
  if (source.created) await emitUserEvent(tx, 'user.created', user.id, { user }, at);
  await emitEvents(tx, ['member.added', 'organization.member.added'], organization, { organization, user, role }, at);
  await recordAudit(
    ctx,
    {
      action: 'member.add',
      organizationId: organization.id,
      actorId: user.id,
      targetType: 'user',
      targetId: user.id,
      details: { role, via: source.via, ...(source.connectionId ? { connectionId: source.connectionId } : {}) },
    },
    tx,
  );
}

/**
 * Gives a member the role their identity provider or directory says, as an admin's change would (events, audit,
 * API keys following). Never leaves the organization without an owner: that change is refused and audited, and
 * false returned.
 */
export async function applyRoleFromUpstream(
  ctx: Context,
  tx: Tx,
  organizationId: string,
  userId: string,
  role: Role,
  via: string,
): Promise<boolean> {
  await lockMemberships(tx, organizationId);
  const m = await findMembership(tx, organizationId, userId);
  if (m.role === role) return true;
  if (
    m.role === 'owner' &&
    (await tx.membership.count({ where: { organizationId, role: 'owner', userId: { not: userId } } })) === 0
  ) {
    await recordAudit(
      ctx,
      {
        action: 'member.role.change',
        outcome: 'failure',
        organizationId,
        targetType: 'user',
        targetId: userId,
        details: { from: m.role, to: role, via, reason: 'last_owner' },
      },
      tx,
    );
    return false;
  }
  await setRole(ctx, tx, m, role);
  return true;
}
