// Refresh tokens (RFC 6749 6): opaque, prefixed, stored as SHA-256, rotated on every use
// (docs/architecture.md#identity-sessions-and-tokens).
import type { Context } from '../../../context.ts';
import { addSeconds } from '../../../lib/clock.ts';
import { randomToken, sha256 } from '../../../lib/crypto.ts';
import type { NextRefresh } from './statements.ts';

export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
export const REFRESH_TOKEN_PREFIX = 'tsr_';

/** The refresh token to issue with this response, made before the statement that stores it. */
export function nextRefresh(ctx: Context, client: { grantTypes: string[] }): { value: string; stored: NextRefresh } | null {
  if (!client.grantTypes.includes('refresh_token')) return null;
  const value = randomToken(REFRESH_TOKEN_PREFIX);
  return { value, stored: { hash: sha256(value), expiresAt: addSeconds(ctx.clock.now(), REFRESH_TOKEN_TTL_SECONDS) } };
}
