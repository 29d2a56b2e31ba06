// Revocation (RFC 7009) at /oauth/revoke, and ending a grant with everything issued from it, which a revoked
// connected app and a membership that ends ask for too (docs/architecture.md#tenancy-and-roles).
import type { Context } from '../../context.ts';
import { Prisma } from '../../db.ts';
import { sha256 } from '../../lib/crypto.ts';
import { sqlTimestamp as ts } from '../../lib/sql-value.ts';
import { auditRowCte, auditStamp } from '../audit/audit-sql.ts';
import { eventRowCte, eventStamp } from '../../events/event-sql.ts';
import { authenticateClient } from './client-authentication.ts';
import { InvalidRequest } from './oauth.errors.ts';
import { REFRESH_TOKEN_PREFIX } from './token/refresh-token.ts';
import type { StatementClient } from './token/statements.ts';
import { verifyAccessTokenSignature } from './verify-access-token.ts';

type Params = Record<string, unknown>;
type Tx = Prisma.TransactionClient;
const sql = Prisma.sql;

/** Always succeeds for an authenticated client (RFC 7009 2.2): an unknown token is simply already gone. */
export async function revoke(ctx: Context, params: Params): Promise<void> {
  const client = await authenticateClient(ctx, params.client_id, params.client_secret);
  if (typeof params.token !== 'string' || !params.token) throw new InvalidRequest('token is required');
  const token = params.token;
  if (token.length > 8192) return;
  if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
    await revokeGrantOfToken(ctx, client, { refreshHash: sha256(token) });
    return;
  }
  // The signature says which grant; the statement revokes it only if it is this client's.
  const signed = await verifyAccessTokenSignature(ctx, token).catch(() => null);
  if (signed && signed.clientId === client.clientId) await revokeGrantOfToken(ctx, client, { grantId: signed.grantId });
}

/**
 * Revocation (RFC 7009): ends the grant of a refresh token (by its hash) or of an access token (by its grant id),
 * if it is this client's, with the oauth_client.token_revoked event and the audit entry. False when not found.
 */
export async function revokeGrantOfToken(
  ctx: Context,
  client: StatementClient,
  target: { refreshHash: string } | { grantId: string },
): Promise<boolean> {
  const now = ctx.clock.now();
  const find =
    'refreshHash' in target
      ? sql`select grant_id from refresh_tokens where token_hash = ${target.refreshHash}::text and client_id = ${client.id}::text`
      : sql`select id as grant_id from oauth_grants where id = ${target.grantId}::text and client_id = ${client.id}::text`;
  const [row] = await ctx.db.$queryRaw<{ found: number }[]>`
    with target as (${find}),
    ended_grant as (
      update oauth_grants set revoked_at = ${ts(now)} where id in (select grant_id from target) and revoked_at is null
    ), ended_tokens as (
      update refresh_tokens set revoked_at = ${ts(now)} where grant_id in (select grant_id from target) and revoked_at is null
    ), ${eventRowCte(eventStamp(ctx), 'event', 'target t', {
      kind: 'oauth_client.token_revoked',
      organizationId: client.organizationId,
      facts: { client, grantId: sql`t.grant_id` },
    })}, ${auditRowCte(auditStamp(ctx), 'audit', 'target', {
      action: 'oauth.token.revoke',
      organizationId: client.organizationId,
      actorType: 'anonymous',
      actorId: null,
      targetType: 'oauth_client',
      targetId: client.id,
      details: {},
    })}
    select count(*)::int as found from target`;
  return (row?.found ?? 0) > 0;
}

/**
 * Ends the live grants `which` names and everything issued from them, in two statements however many there are:
 * their refresh tokens at once, their access tokens and codes at their next use (their statements check that the
 * grant stands). Says how many grants ended.
 */
export async function revokeGrants(
  ctx: Context,
  tx: Tx | Context['db'],
  which: Prisma.OAuthGrantWhereInput,
): Promise<number> {
  const now = ctx.clock.now();
  const live = { ...which, revokedAt: null };
  // The tokens first, while their grants still match `live`.
  await tx.refreshToken.updateMany({ where: { revokedAt: null, grant: live }, data: { revokedAt: now } });
  return (await tx.oAuthGrant.updateMany({ where: live, data: { revokedAt: now } })).count;
}
