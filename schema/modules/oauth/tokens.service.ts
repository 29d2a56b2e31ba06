// Minting and checking tokens. Access tokens are RFC 9068 JWTs (typ at+jwt) signed with our current key;
// each names its grant, so revoking the grant (a replayed code, a revoked consent, a disabled client) ends
// it, and carries the user's session version, so a password change ends it too.
import { createHash, randomUUID } from 'node:crypto';
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { addSeconds, epochSeconds } from '../../lib/clock.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import type { SigningAlg } from '../keys/keys.service.ts';
import { InvalidToken } from './oauth.errors.ts';
import { userClaims } from './claims.service.ts';

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
export const ID_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_PREFIX = 'tsr_';

type Tx = Prisma.TransactionClient;

export interface TokenSubject {
  client: { id: string; clientId: string; organizationId: string; idTokenSignedResponseAlg: string; grantTypes: string[] };
  grantId: string;
  userId: string | null;
  organizationId: string;
  scope: string[];
  authTime: Date | null;
  sessionVersion: number;
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
}

export async function mintAccessToken(ctx: Context, s: TokenSubject): Promise<string> {
  const now = ctx.clock.now();
  return ctx.keys.sign(
    {
      iss: ctx.settings.issuer(),
      sub: s.userId ?? s.client.clientId,
      aud: s.client.clientId,
      client_id: s.client.clientId,
      scope: s.scope.join(' '),
      iat: epochSeconds(now),
      exp: epochSeconds(now) + ACCESS_TOKEN_TTL_SECONDS,
      jti: randomUUID(),
      org_id: s.organizationId,
      gid: s.grantId,
      sv: s.sessionVersion,
      ...(s.authTime ? { auth_time: epochSeconds(s.authTime) } : {}),
    },
    'RS256',
    'at+jwt',
  );
}

/** The left half of the access token's hash, with the hash of the ID token's algorithm (OIDC Core 3.1.3.6). */
function atHash(accessToken: string, alg: SigningAlg): string {
  const digest = createHash(alg === 'EdDSA' ? 'sha512' : 'sha256').update(accessToken).digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

export async function mintIdToken(ctx: Context, s: TokenSubject, accessToken: string, nonce: string | null): Promise<string> {
  const now = ctx.clock.now();
  const alg = s.client.idTokenSignedResponseAlg as SigningAlg;
  const claims = s.userId ? await userClaims(ctx, s.userId, s.organizationId, s.scope) : { sub: s.client.clientId };
  return ctx.keys.sign(
    {
      ...claims,
      iss: ctx.settings.issuer(),
      aud: s.client.clientId,
      azp: s.client.clientId,
      iat: epochSeconds(now),
      exp: epochSeconds(now) + ID_TOKEN_TTL_SECONDS,
      ...(s.authTime ? { auth_time: epochSeconds(s.authTime) } : {}),
      ...(nonce ? { nonce } : {}),
      at_hash: atHash(accessToken, alg),
    },
    alg,
    'JWT',
  );
}

/** Stores a new refresh token of the grant and returns its value. */
export async function createRefreshToken(ctx: Context, tx: Tx, s: TokenSubject): Promise<string> {
  const token = randomToken(REFRESH_TOKEN_PREFIX);
  await tx.refreshToken.create({
    data: {
      tokenHash: sha256(token),
      grantId: s.grantId,
      clientId: s.client.id,
      userId: s.userId!,
      organizationId: s.organizationId,
      scope: s.scope.join(' '),
      authTime: s.authTime ?? ctx.clock.now(),
      sessionVersion: s.sessionVersion,
      expiresAt: addSeconds(ctx.clock.now(), REFRESH_TOKEN_TTL_SECONDS),
    },
  });
  return token;
}

export async function issueTokens(
  ctx: Context,
  tx: Tx,
  s: TokenSubject,
  options: { refresh: boolean; idToken: boolean; nonce?: string | null },
): Promise<TokenResponse> {
  const accessToken = await mintAccessToken(ctx, s);
  const response: TokenResponse = { access_token: accessToken, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_SECONDS, scope: s.scope.join(' ') };
  if (options.refresh) response.refresh_token = await createRefreshToken(ctx, tx, s);
  if (options.idToken) response.id_token = await mintIdToken(ctx, s, accessToken, options.nonce ?? null);
  return response;
}

export interface VerifiedAccessToken {
  sub: string;
  userId: string | null;
  clientId: string;
  clientDbId: string;
  organizationId: string;
  scope: string[];
  grantId: string;
  exp: number;
  iat: number;
}

/**
 * Checks an access token: our signature (never none or HS256), at+jwt, our issuer, not expired; then that its
 * grant stands, its client is enabled and the user's session version has not moved. Else invalid_token.
 */
export async function verifyAccessToken(ctx: Context, token: string): Promise<VerifiedAccessToken> {
  if (token.length > 8192 || token.split('.').length !== 3) throw new InvalidToken();
  let payload;
  try {
    ({ payload } = await ctx.keys.verify(token, { issuer: ctx.settings.issuer(), typ: 'at+jwt', currentDate: ctx.clock.now() }));
  } catch {
    throw new InvalidToken();
  }
  const { gid, client_id: clientId, org_id: organizationId, sv, scope, sub, exp, iat } = payload as Record<string, unknown>;
  if (typeof gid !== 'string' || typeof clientId !== 'string' || typeof organizationId !== 'string' || typeof sub !== 'string') throw new InvalidToken();
  const grant = await ctx.db.oAuthGrant.findUnique({
    where: { id: gid },
    select: { revokedAt: true, userId: true, client: { select: { id: true, enabled: true, clientId: true } }, user: { select: { sessionVersion: true } } },
  });
  if (!grant || grant.revokedAt || !grant.client.enabled || grant.client.clientId !== clientId) throw new InvalidToken();
  if (grant.userId && grant.user?.sessionVersion !== sv) throw new InvalidToken();
  return {
    sub,
    userId: grant.userId,
    clientId,
    clientDbId: grant.client.id,
    organizationId,
    scope: typeof scope === 'string' ? scope.split(' ').filter(Boolean) : [],
    grantId: gid,
    exp: Number(exp),
    iat: Number(iat),
  };
}

/** Ends a grant and everything issued from it. */
export async function revokeGrant(ctx: Context, tx: Tx | Context['db'], grantId: string): Promise<void> {
  const now = ctx.clock.now();
  await tx.oAuthGrant.updateMany({ where: { id: grantId, revokedAt: null }, data: { revokedAt: now } });
  await tx.refreshToken.updateMany({ where: { grantId, revokedAt: null }, data: { revokedAt: now } });
}
