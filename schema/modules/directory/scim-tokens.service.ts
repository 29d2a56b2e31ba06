// A directory's bearer tokens (docs/architecture.md#directory-provisioning): made and revoked by an organization's
// owners (a directory decides who joins and with what role; admins see the tokens), shown once, stored as SHA-256; each provisions its own organization only.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { NotFoundError } from '../../errors/index.ts';
import { organizationInScope, requireActor, requireOrgRole, requireOwner } from '../../auth/access.ts';
import { SignInOwnersOnlyError } from '../sso/sso.errors.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { recordAudit } from '../audit/audit.service.ts';
import type { ScimCaller } from './directory.types.ts';

export const SCIM_TOKEN_PREFIX = 'tsd_';
/** last_used_at is written at most this often: a sync sends thousands of requests a minute. */
const LAST_USED_GRANULARITY_MS = 60_000;

const createInput = z.object({ name: fields.name, organizationId: fields.id.optional() }).strict();

export async function createScimToken(ctx: Context, input: unknown) {
  const data = parseInput(createInput, input);
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
