// Introspection (RFC 7662) at /oauth/introspect.
import type { Context } from '../../context.ts';
import { sha256 } from '../../lib/crypto.ts';
import { sqlTimestamp as ts } from '../../lib/sql-value.ts';
import { authenticateClient } from './client-authentication.ts';
import { InvalidRequest } from './oauth.errors.ts';
import { REFRESH_TOKEN_PREFIX } from './token/refresh-token.ts';
import { verifyAccessToken } from './verify-access-token.ts';

type Params = Record<string, unknown>;

/**
 * Only tokens of the introspecting client's own organization are described; others are inactive to it. A public
 * client, which anyone who knows its client_id can speak for, is told only of its own tokens
 * (docs/architecture.md#apps-without-secrets).
 */
export async function introspect(ctx: Context, params: Params): Promise<Record<string, unknown>> {
  const client = await authenticateClient(ctx, params.client_id, params.client_secret);
  if (typeof params.token !== 'string' || !params.token) throw new InvalidRequest('token is required');
  const token = params.token;
  if (token.length > 8192) return { active: false };
  if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
    const row = await liveRefreshToken(ctx, sha256(token), client.organizationId);
    if (!row || (client.secretHash === null && row.client_id !== client.clientId)) return { active: false };
    return {
      active: true,
      token_type: 'refresh_token',
      scope: row.scope,
      client_id: row.client_id,
      sub: row.user_id,
      exp: Math.floor(row.expires_at.getTime() / 1000),
      iat: Math.floor(row.created_at.getTime() / 1000),
      iss: ctx.settings.issuer(),
    };
  }
  const verified = await verifyAccessToken(ctx, token, { anyAudience: true }).catch(() => null);
  // Shown to the clients of the organization the token acts in: its client's, or for a token of Tessera's CLI or of a
  // metadata document's client, the one it was granted in (docs/architecture.md#apps-without-secrets).
  const organizations = verified ? [verified.clientOrganizationId, verified.organizationId] : [];
  if (!verified || !organizations.includes(client.organizationId)) return { active: false };
  if (client.secretHash === null && verified.clientId !== client.clientId) return { active: false };
  return {
    active: true,
    token_type: 'Bearer',
    scope: verified.scope.join(' '),
    client_id: verified.clientId,
    sub: verified.sub,
    aud: verified.audience.length === 1 ? verified.audience[0] : verified.audience,
    exp: verified.exp,
    iat: verified.iat,
    iss: ctx.settings.issuer(),
    org_id: verified.organizationId,
  };
}

/** What introspection says of a refresh token, in one statement; null when it is not active for `organizationId`. */
export async function liveRefreshToken(ctx: Context, hash: string, organizationId: string) {
  const now = ctx.clock.now();
  const [row] = await ctx.db.$queryRaw<
    { scope: string; user_id: string; client_id: string; expires_at: Date; created_at: Date }[]
  >`
    select rt.scope, rt.user_id, c.client_id, rt.expires_at, rt.created_at
    from refresh_tokens rt
    join oauth_grants g on g.id = rt.grant_id
    join oauth_clients c on c.id = rt.client_id
    join users u on u.id = rt.user_id
    join memberships m on m.user_id = rt.user_id and m.organization_id = rt.organization_id
    where rt.token_hash = ${hash}::text and rt.used_at is null and rt.revoked_at is null and rt.expires_at > ${ts(now)}
      and g.revoked_at is null and c.enabled and c.organization_id = ${organizationId}::text
      and u.session_version = rt.session_version`;
  return row ?? null;
}
