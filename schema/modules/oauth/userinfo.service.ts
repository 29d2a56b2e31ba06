// The userinfo endpoint (OIDC Core 5.3) at /oauth/userinfo.
import type { Context } from '../../context.ts';
import { InsufficientScopeError } from '../../errors/index.ts';
import { claimsFor } from './claims.service.ts';
import { verifyAccessToken, type VerifiedAccessToken } from './verify-access-token.ts';

/**
 * OIDC Core 5.3: one statement (the token check reads the claims, and the licensed products the scope reveals,
 * too); the token must carry openid (5.3.3).
 */
export async function userinfo(ctx: Context, accessToken: string): Promise<Record<string, unknown>> {
  const verified = await verifyAccessToken(ctx, accessToken, { products: true });
  if (!verified.scope.includes('openid'))
    throw new InsufficientScopeError('openid', 'The access token was not granted the openid scope');
  return accessTokenClaims(verified);
}

/** The user's claims for an access token's scope (userinfo): from the row verifyAccessToken read. */
export function accessTokenClaims(token: VerifiedAccessToken): Record<string, unknown> {
  return token.claims ? claimsFor(token.claims, token.scope) : { sub: token.sub };
}
