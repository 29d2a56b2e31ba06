// Which directory groups give a role or a subscription's seats (docs/architecture.md#directory-provisioning): set by an
// organization's owners and admins, never to a role above their own (nor removed when it gives one). A new mapping applies at once to the group's current members (seats while some
// are left, the rest audited); removing one takes nothing back.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation } from '../../db.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../errors/index.ts';
import { organizationInScope, requireOrgRole } from '../../auth/access.ts';
import { roleAtLeast } from '../../auth/roles.ts';
import { RoleAboveYoursError } from '../members/members.errors.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { followGroups } from './group-effects.ts';

const createInput = z
  .object({
    group: z.string().trim().min(1, 'is required').max(200, 'must be at most 200 characters'),
    role: fields.role.optional(),
    subscriptionId: fields.id.optional(),
    organizationId: fields.id.optional(),
  })
  .strict();

export async function listGroupMappings(ctx: Context, organizationId?: string | null) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  return ctx.db.directoryGroupMapping.findMany({ where: { organizationId: orgId }, orderBy: { createdAt: 'asc' } });
}

export async function createGroupMapping(ctx: Context, input: unknown) {
  const data = parseInput(createInput, input);
  const organizationId = organizationInScope(ctx, data.organizationId);
  const callerRole = await requireOrgRole(ctx, organizationId, 'admin');
  // A group that makes owners is an owner's decision, as granting the role is (members.service.ts).
  if (data.role && !roleAtLeast(callerRole, data.role)) throw new RoleAboveYoursError('map a group to');
  if (!data.role === !data.subscriptionId) {
    throw new ValidationError("A group gives a role or a subscription's seats", [
      { path: data.role ? 'subscriptionId' : 'role', message: 'give either role or subscription_id' },
    ]);
  }
  const now = ctx.clock.now();
  const id = uuidv7(now.getTime());
  try {
    await ctx.db.$transaction(
      async (tx) => {
        if (
          data.subscriptionId &&
          !(await tx.subscription.findFirst({
            where: { id: data.subscriptionId, organizationId },
            select: { id: true },
          }))
        ) {
          throw new ValidationError('No such subscription in this organization', [
            { path: 'subscriptionId', message: 'is not a subscription of this organization' },
          ]);
        }
        await tx.directoryGroupMapping.create({
          data: {
            id,
            organizationId,
            groupName: data.group,
            role: data.role ?? null,
            subscriptionId: data.subscriptionId ?? null,
            createdAt: now,
          },
        });
        await recordAudit(
          ctx,
          {
            action: 'directory.mapping.create',
            organizationId,
            targetType: 'directory_mapping',
            targetId: id,
            details: { group: data.group, role: data.role, subscriptionId: data.subscriptionId },
          },
          tx,
        );
        // The group's members, its name compared as its unique index does (an ILIKE would read _ and % as wildcards).
        const members = await tx.$queryRaw<{ userId: string }[]>`
        select u.user_id as "userId" from scim_groups g
        join scim_group_members gm on gm.group_id = g.id
        join scim_users u on u.id = gm.scim_user_id
        where g.organization_id = ${organizationId} and lower(g.display_name) = lower(${data.group})`;
        await followGroups(
          ctx,
          tx,
          organizationId,
          members.map((m) => m.userId),
          { seatRefusal: 'audit' },
        );
      },
      { timeout: 60_000 },
    );
  } catch (error) {
    if (isUniqueViolation(error)) throw new ConflictError(`The group ${data.group} is already mapped`);
    throw error;
  }
  return ctx.db.directoryGroupMapping.findUniqueOrThrow({ where: { id } });
}

export async function deleteGroupMapping(ctx: Context, id: string) {
  const { id: mappingId } = parseInput(z.object({ id: fields.id }), { id });
  const found = await ctx.db.directoryGroupMapping.findUnique({ where: { id: mappingId } });
  if (!found) throw new NotFoundError('Group mapping');
  const callerRole = await requireOrgRole(ctx, found.organizationId, 'admin', 'Group mapping');
  // Without it the group's owners would lose the role at the directory's next change: only owners act on owners.
  if (found.role && !roleAtLeast(callerRole, found.role)) throw new RoleAboveYoursError('remove the mapping of');
  await ctx.db.$transaction(async (tx) => {
    const { count } = await tx.directoryGroupMapping.deleteMany({ where: { id: mappingId } });
    if (!count) throw new NotFoundError('Group mapping');
    await recordAudit(
      ctx,
      {
        action: 'directory.mapping.delete',
        organizationId: found.organizationId,
        targetType: 'directory_mapping',
        targetId: mappingId,
        details: { group: found.groupName },
      },
      tx,
    );
  });
  return true;
}
