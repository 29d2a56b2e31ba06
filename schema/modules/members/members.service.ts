// Memberships: roles within an organization. Owners can do everything; admins manage members and admins but
// never owners; every organization keeps at least one owner.
import { z } from 'zod';
import type { Context, Role } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { ConflictError, ForbiddenError, NotFoundError } from '../../errors/index.ts';
import { forgetMemberships, requireOrgRole, roleAtLeast } from '../../auth/access.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { emitEvent, emitEvents } from '../../events/catalog.ts';
import { recordAudit } from '../audit/audit.service.ts';

type Tx = Prisma.TransactionClient;

export async function listMembers(ctx: Context, organizationId: string, page?: PageInput) {
  await requireOrgRole(ctx, organizationId, 'admin');
  const { limit, args } = paged(page, { organizationId });
  return toPage(await ctx.db.membership.findMany({ ...args, include: { user: true } }), limit);
}

/**
 * Membership changes of one organization take turns: without this, two owners stepping down at once each see
 * the other still owner, and both succeed. Taken before the membership is read, so the reads see the winner.
 */
async function lockMemberships(tx: Tx, organizationId: string) {
  await tx.$executeRaw`select 1 from organizations where id = ${organizationId} for update`;
}

async function findMembership(tx: Tx, organizationId: string, userId: string) {
  const m = await tx.membership.findUnique({
    where: { userId_organizationId: { userId, organizationId } },
    include: { user: { select: { id: true, email: true, name: true } }, organization: { select: { id: true, name: true } } },
  });
  if (!m) throw new NotFoundError('Member');
  return m;
}

async function assertKeepsAnOwner(tx: Tx, organizationId: string, leavingOwnerId: string) {
  const others = await tx.membership.count({ where: { organizationId, role: 'owner', userId: { not: leavingOwnerId } } });
  if (others === 0) throw new ConflictError('An organization needs at least one owner: make someone else owner first');
}

/**
 * An API key acts with a role never above its creator's (DESIGN 3). When the creator leaves the organization
 * (role null) the keys it made there are revoked; when it is demoted they drop to its new role.
 */
async function alignApiKeys(ctx: Context, tx: Tx, organization: { id: string; name: string }, userId: string, role: Role | null) {
  const keys = await tx.apiKey.findMany({ where: { organizationId: organization.id, createdById: userId, revokedAt: null } });
  for (const key of keys) {
    if (role === null) {
      await tx.apiKey.update({ where: { id: key.id }, data: { revokedAt: ctx.clock.now() } });
      await emitEvent(tx, 'api_key.revoked', organization, { apiKey: { id: key.id, name: key.name } });
      await recordAudit(ctx, { action: 'api_key.revoke', organizationId: organization.id, targetType: 'api_key', targetId: key.id, details: { reason: 'creator_left' } }, tx);
    } else if (!roleAtLeast(role, key.role)) {
      await tx.apiKey.update({ where: { id: key.id }, data: { role } });
      await recordAudit(ctx, {
        action: 'api_key.role.lower', organizationId: organization.id, targetType: 'api_key', targetId: key.id,
        details: { from: key.role, to: role, reason: 'creator_demoted' },
      }, tx);
    }
  }
}

/** Admins may act on members and admins; only owners act on owners or make owners. */
function assertMayManage(callerRole: Role, targetRole: Role, newRole?: Role) {
  if (targetRole === 'owner' && callerRole !== 'owner') throw new ForbiddenError('Only an owner can change an owner');
  if (newRole && !roleAtLeast(callerRole, newRole)) throw new ForbiddenError('You cannot grant a role above yours');
}

const roleInput = z.object({ role: fields.role }).strict();

export async function changeMemberRole(ctx: Context, organizationId: string, userId: string, input: unknown) {
  const callerRole = await requireOrgRole(ctx, organizationId, 'admin');
  const { role } = parseInput(roleInput, input);
  const updated = await ctx.db.$transaction(async (tx) => {
    await lockMemberships(tx, organizationId);
    const m = await findMembership(tx, organizationId, userId);
    assertMayManage(callerRole, m.role, role);
    if (m.role === role) return m;
    if (m.role === 'owner') await assertKeepsAnOwner(tx, organizationId, userId);
    const updated = await tx.membership.update({ where: { id: m.id }, data: { role }, include: { user: true } });
    await emitEvents(tx, ['member.role.changed', 'organization.member.role_changed'], m.organization, {
      organization_id: organizationId, member_id: userId, user: m.user, role, previous_role: m.role,
    });
    await recordAudit(ctx, { action: 'member.role.change', organizationId, targetType: 'user', targetId: userId, details: { from: m.role, to: role } }, tx);
    await alignApiKeys(ctx, tx, m.organization, userId, role);
    return updated;
  });
  forgetMemberships(ctx);
  return ctx.db.membership.findUniqueOrThrow({ where: { id: updated.id }, include: { user: true } });
}

export async function removeMember(ctx: Context, organizationId: string, userId: string) {
  const actor = ctx.actor;
  const leaving = actor?.kind !== 'apiKey' && actor?.userId === userId;
  const callerRole = await requireOrgRole(ctx, organizationId, leaving ? 'member' : 'admin');
  await ctx.db.$transaction(async (tx) => {
    await lockMemberships(tx, organizationId);
    const m = await findMembership(tx, organizationId, userId);
    if (!leaving) assertMayManage(callerRole, m.role);
    if (m.role === 'owner') await assertKeepsAnOwner(tx, organizationId, userId);
    await tx.membership.delete({ where: { id: m.id } });
    // A session acting in the organization it has just left falls back to no organization.
    await tx.session.updateMany({ where: { userId, organizationId }, data: { organizationId: null } });
    await emitEvents(tx, ['member.removed', 'organization.member.removed'], m.organization, {
      organization_id: organizationId, member_id: userId, user: m.user, role: m.role,
    });
    await recordAudit(ctx, { action: 'member.remove', organizationId, targetType: 'user', targetId: userId }, tx);
    await alignApiKeys(ctx, tx, m.organization, userId, null);
  });
  forgetMemberships(ctx);
  return true;
}
