// API keys: a public key (the Bearer value) and a secret (X-API-Secret), both shown once. The key belongs to
// one organization and acts there with a role chosen at creation, never above its creator's.
import { z } from 'zod';
import type { Context, Role } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { NotFoundError } from '../../errors/index.ts';
import { KeyRoleAboveYoursError } from './api-keys.errors.ts';
import { organizationInScope, requireActor, requireOrgRole } from '../../auth/access.ts';
import { roleAtLeast } from '../../auth/roles.ts';
import { constantTimeEqual, randomToken, sha256 } from '../../lib/crypto.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { emitEvent } from '../../events/emit.ts';

export const API_KEY_PREFIX = 'tsk_';
export const API_KEY_SECRET_PREFIX = 'tsks_';

/** Enough of a key to recognise it in a list (like the last digits of a card), not enough to use it. */
export const keyPrefix = (key: string) => `${key.slice(0, API_KEY_PREFIX.length + 6)}…`;
const LAST_USED_GRANULARITY_MS = 60_000;

const createInput = z.object({
  name: fields.name,
  role: z.enum(['admin', 'member'], { message: 'must be admin or member' }).optional(),
  organizationId: fields.id.optional(),
});

export async function createApiKey(ctx: Context, input: unknown) {
  const data = parseInput(createInput, input);
  const organizationId = organizationInScope(ctx, data.organizationId);
  const callerRole = await requireOrgRole(ctx, organizationId, 'admin');
  const role: Role = data.role ?? (callerRole === 'owner' ? 'admin' : callerRole);
  if (!roleAtLeast(callerRole, role)) throw new KeyRoleAboveYoursError();
  const key = randomToken(API_KEY_PREFIX, 16);
  const secret = randomToken(API_KEY_SECRET_PREFIX);
  const actor = requireActor(ctx);
  const createdById = actor.kind === 'apiKey' ? actor.createdById : actor.userId;
  const record = await ctx.db.$transaction(async (tx) => {
    const record = await tx.apiKey.create({
      data: { organizationId, name: data.name, key, secretHash: sha256(secret), role, createdById },
      include: { organization: { select: { id: true, name: true } } },
    });
    await emitEvent(tx, 'api_key.created', record.organization, { apiKey: record }, { at: ctx.clock.now() });
    await recordAudit(
      ctx,
      { action: 'api_key.create', organizationId, targetType: 'api_key', targetId: record.id },
      tx,
    );
    return record;
  });
  return { ...record, secret };
}

export async function listApiKeys(ctx: Context, organizationId?: string | null, page?: PageInput) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  const { limit, args } = paged(page, { organizationId: orgId, revokedAt: null });
  return toPage(await ctx.db.apiKey.findMany(args), limit);
}

export async function revokeApiKey(ctx: Context, input: unknown) {
  const { id } = parseInput(z.object({ id: fields.id }), input);
  const record = await ctx.db.apiKey.findUnique({
    where: { id },
    include: { organization: { select: { id: true, name: true } } },
  });
  if (!record || record.revokedAt) throw new NotFoundError('API key');
  await requireOrgRole(ctx, record.organizationId, 'admin', 'API key');
  return ctx.db.$transaction(async (tx) => {
    const revoked = await tx.apiKey.update({ where: { id }, data: { revokedAt: ctx.clock.now() } });
    await emitEvent(tx, 'api_key.revoked', record.organization, { apiKey: record }, { at: ctx.clock.now() });
    await recordAudit(
      ctx,
      { action: 'api_key.revoke', organizationId: record.organizationId, targetType: 'api_key', targetId: id },
      tx,
    );
    return revoked;
  });
}

/**
 * The API-key-follows-creator rule (docs/architecture.md#tenancy-and-roles): a key never outlives its creator's
 * right to it. Called in the same transaction wherever the creator's membership of `organization` ends (role null:
 * removed, or the account deleted) or changes: the keys it made there are revoked, or lowered to its new role.
 */
export async function apiKeysFollowCreator(
  ctx: Context,
  tx: Prisma.TransactionClient,
  organization: { id: string; name: string },
  creatorId: string,
  role: Role | null,
  reason: 'creator_left' | 'creator_deleted' | 'creator_demoted' | 'account_taken_over',
) {
  const keys = await tx.apiKey.findMany({
    where: { organizationId: organization.id, createdById: creatorId, revokedAt: null },
  });
  for (const key of keys) {
    if (role === null) {
      await tx.apiKey.update({ where: { id: key.id }, data: { revokedAt: ctx.clock.now() } });
      await emitEvent(tx, 'api_key.revoked', organization, { apiKey: key }, { at: ctx.clock.now() });
      await recordAudit(
        ctx,
        {
          action: 'api_key.revoke',
          organizationId: organization.id,
          targetType: 'api_key',
          targetId: key.id,
          details: { reason },
        },
        tx,
      );
    } else if (!roleAtLeast(role, key.role)) {
      await tx.apiKey.update({ where: { id: key.id }, data: { role } });
      await recordAudit(
        ctx,
        {
          action: 'api_key.role.lower',
          organizationId: organization.id,
          targetType: 'api_key',
          targetId: key.id,
          details: { from: key.role, to: role, reason },
        },
        tx,
      );
    }
  }
}

/** Checks a key and its secret; returns the key record or null. Touches last-used at most once a minute. */
export async function authenticateApiKey(ctx: Context, key: string, secret: string) {
  if (!key.startsWith(API_KEY_PREFIX) || key.length > 100 || secret.length > 200) return null;
  const now = ctx.clock.now();
  const secretHash = sha256(secret);
  // One statement on every API-key request: the read, and the last-use touch only when it is a minute old.
  const [record] = await ctx.db.$queryRaw<AuthenticatedKey[]>`
    with k as (
      select id, organization_id, created_by_id, name, role::text as role, secret_hash, created_at, last_used_at
      from api_keys where key = ${key}::text and revoked_at is null
    ), touched as (
      update api_keys set last_used_at = ${now}::timestamp(3)
      where id = (select id from k) and secret_hash = ${secretHash}::text
        and (last_used_at is null or last_used_at < ${now}::timestamp(3) - make_interval(secs => ${LAST_USED_GRANULARITY_MS / 1000}::int))
    )
    select id, organization_id as "organizationId", created_by_id as "createdById", name, role, secret_hash as "secretHash",
           created_at as "createdAt", last_used_at as "lastUsedAt"
    from k`;
  if (!record || !constantTimeEqual(record.secretHash, secretHash)) return null;
  return record;
}

interface AuthenticatedKey {
  id: string;
  organizationId: string;
  createdById: string | null;
  name: string;
  role: Role;
  secretHash: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}
