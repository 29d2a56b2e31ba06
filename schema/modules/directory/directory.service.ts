// A directory's administration (docs/architecture.md#directory-provisioning): what the directory.graphql.ts fields
// and the SCIM endpoint's token and log steps call. Provisioning users and groups is directory-users.service.ts and
// directory-groups.service.ts; what groups give, group-effects.ts.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { isUniqueViolation } from '../../db.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../errors/index.ts';
import { organizationInScope, requireActor, requireOrgRole, requireOwner } from '../../auth/access.ts';
import { roleAtLeast } from '../../auth/roles.ts';
import { SignInOwnersOnlyError } from '../sso/sso.errors.ts';
import { RoleAboveYoursError } from '../members/members.errors.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { followGroups } from './group-effects.ts';
import type { ScimCaller } from './directory.types.ts';

// ---- tokens ---------------------------------------------------------------------------------------------------------

// A directory's bearer tokens: made and revoked by an organization's owners (a directory decides who joins and with
// what role; admins see the tokens), shown once, stored as SHA-256; each provisions its own organization only.

export const SCIM_TOKEN_PREFIX = 'tsd_';
/** last_used_at is written at most this often: a sync sends thousands of requests a minute. */
const LAST_USED_GRANULARITY_MS = 60_000;

const tokenInput = z.object({ name: fields.name, organizationId: fields.id.optional() }).strict();

export async function createScimToken(ctx: Context, input: unknown) {
  const data = parseInput(tokenInput, input);
  const organizationId = organizationInScope(ctx, data.organizationId);
  await requireOwner(ctx, organizationId, SignInOwnersOnlyError);
  const token = randomToken(SCIM_TOKEN_PREFIX);
  const now = ctx.clock.now();
  const actor = requireActor(ctx);
  const createdById = actor.kind === 'apiKey' ? actor.createdById : actor.userId;
  const record = await ctx.db.$transaction(async (tx) => {
    const record = await tx.scimToken.create({
      data: {
        id: uuidv7(now.getTime()),
        organizationId,
        name: data.name,
        tokenHash: sha256(token),
        createdById,
        createdAt: now,
      },
    });
    await recordAudit(
      ctx,
      {
        action: 'scim_token.create',
        organizationId,
        targetType: 'scim_token',
        targetId: record.id,
        details: { name: data.name },
      },
      tx,
    );
    return record;
  });
  return { ...record, token };
}

export async function listScimTokens(ctx: Context, organizationId?: string | null) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  return ctx.db.scimToken.findMany({ where: { organizationId: orgId }, orderBy: { createdAt: 'desc' } });
}

export async function revokeScimToken(ctx: Context, id: string) {
  const { id: tokenId } = parseInput(z.object({ id: fields.id }), { id });
  const found = await ctx.db.scimToken.findUnique({ where: { id: tokenId } });
  if (!found) throw new NotFoundError('Directory token');
  await requireOwner(ctx, found.organizationId, SignInOwnersOnlyError, 'Directory token');
  const now = ctx.clock.now();
  await ctx.db.$transaction(async (tx) => {
    await tx.scimToken.updateMany({ where: { id: tokenId, revokedAt: null }, data: { revokedAt: now } });
    await recordAudit(
      ctx,
      {
        action: 'scim_token.revoke',
        organizationId: found.organizationId,
        targetType: 'scim_token',
        targetId: tokenId,
      },
      tx,
    );
  });
  return { ...found, revokedAt: found.revokedAt ?? now };
}

/** The directory a bearer token provisions, or null for an unknown or revoked one. */
export async function authenticateScimToken(ctx: Context, bearer: string): Promise<ScimCaller | null> {
  if (!bearer.startsWith(SCIM_TOKEN_PREFIX) || bearer.length > 200) return null;
  const now = ctx.clock.now();
  // One statement, which writes last_used_at only when it is stale.
  const [row] = await ctx.db.$queryRaw<{ id: string; organizationId: string }[]>`
    with t as (select id, organization_id, last_used_at from scim_tokens where token_hash = ${sha256(bearer)} and revoked_at is null),
    touched as (
      update scim_tokens set last_used_at = ${now} from t
      where scim_tokens.id = t.id and (t.last_used_at is null or t.last_used_at < ${new Date(now.getTime() - LAST_USED_GRANULARITY_MS)})
      returning 1)
    select t.id, t.organization_id as "organizationId" from t`;
  return row ? { tokenId: row.id, organizationId: row.organizationId } : null;
}

// ---- group mappings -------------------------------------------------------------------------------------------------

// Which directory groups give a role or a subscription's seats: set by an organization's owners and admins, never to a
// role above their own (nor removed when it gives one). A new mapping applies at once to the group's current members
// (seats while some are left, the rest audited); removing one takes nothing back.

const mappingInput = z
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
  const data = parseInput(mappingInput, input);
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

// ---- the request log ------------------------------------------------------------------------------------------------

// The directory's requests and how each ended, for its admins to read. One insert per request, never an update of a
// shared row (docs/architecture.md#hot-paths); the hourly clean-up keeps the last ones.

export interface ScimRequestOutcome {
  method: string;
  /** The path without its query. */
  path: string;
  status: number;
  scimType?: string | null;
  detail?: string | null;
}

const MAX_TEXT = 500;

/** Text as a column can hold it: no NUL, no lone surrogate, at most 500 characters. */
function storable(text: string, max = MAX_TEXT): string {
  return text.replaceAll('\u0000', '').toWellFormed().slice(0, max);
}

export async function recordScimRequest(ctx: Context, caller: ScimCaller, outcome: ScimRequestOutcome): Promise<void> {
  const now = ctx.clock.now();
  await ctx.db.scimRequest.create({
    data: {
      id: uuidv7(now.getTime()),
      organizationId: caller.organizationId,
      tokenId: caller.tokenId,
      method: storable(outcome.method, 10),
      path: storable(outcome.path),
      status: outcome.status,
      scimType: outcome.scimType ? storable(outcome.scimType, 50) : null,
      detail: outcome.detail ? storable(outcome.detail) : null,
      createdAt: now,
    },
  });
}

/** The directory's last requests, newest first, for the admins to see why someone did not arrive. */
export async function listScimRequests(ctx: Context, organizationId?: string | null, limit = 100) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  return ctx.db.scimRequest.findMany({
    where: { organizationId: orgId },
    orderBy: { id: 'desc' },
    take: Math.min(Math.max(limit, 1), 100),
  });
}
