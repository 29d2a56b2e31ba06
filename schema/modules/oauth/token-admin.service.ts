// Revocation (RFC 7009), introspection (RFC 7662) and userinfo. RP-initiated logout is logout.service.ts.
import type { Context } from '../../context.ts';
import { InsufficientScopeError } from '../../errors/index.ts';
import { sha256 } from '../../lib/crypto.ts';
import { authenticateClient } from './client-authentication.ts';
import { InvalidRequest } from './oauth.errors.ts';
import { accessTokenClaims, REFRESH_TOKEN_PREFIX, verifyAccessToken, verifyAccessTokenSignature } from './tokens.service.ts';
import { liveRefreshToken, revokeGrantOfToken } from './token-statements.ts';

type Params = Record<string, unknown>;

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

/** Only tokens of the introspecting client's own organization are described; others are inactive to it. */
export async function introspect(ctx: Context, params: Params): Promise<Record<string, unknown>> {
  const client = await authenticateClient(ctx, params.client_id, params.client_secret);
  if (typeof params.token !== 'string' || !params.token) throw new InvalidRequest('token is required');
  const token = params.token;
  if (token.length > 8192) return { active: false };
  if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
    const row = await liveRefreshToken(ctx, sha256(token), client.organizationId);
    if (!row) return { active: false };
    return {
      active: true, token_type: 'refresh_token', scope: row.scope, client_id: row.client_id, sub: row.user_id,
      exp: Math.floor(row.expires_at.getTime() / 1000), iat: Math.floor(row.created_at.getTime() / 1000), iss: ctx.settings.issuer(),
    };
  }
  const verified = await verifyAccessToken(ctx, token).catch(() => null);
  if (!verified || verified.clientOrganizationId !== client.organizationId) return { active: false };
  return {
    active: true, token_type: 'Bearer', scope: verified.scope.join(' '), client_id: verified.clientId, sub: verified.sub,
    aud: verified.clientId, exp: verified.exp, iat: verified.iat, iss: ctx.settings.issuer(), org_id: verified.organizationId,
  };
}

/**
 * OIDC Core 5.3: one statement (the token check reads the claims, and the licensed products the scope reveals,
 * too); the token must carry openid (5.3.3).
 */
export async function userinfo(ctx: Context, accessToken: string): Promise<Record<string, unknown>> {
  const verified = await verifyAccessToken(ctx, accessToken, { products: true });
  if (!verified.scope.includes('openid')) throw new InsufficientScopeError('openid', 'The access token was not granted the openid scope');
  return accessTokenClaims(verified);
}
