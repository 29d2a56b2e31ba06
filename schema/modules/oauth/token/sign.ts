// Signing what the token endpoint issues. Access tokens are RFC 9068 JWTs (typ at+jwt) signed with our current
// key; each names its grant, so revoking the grant (a replayed code, a revoked consent, a disabled client, a member
// removed) ends it, and carries the user's session version, so a password change ends it too. Signing never
// happens inside a transaction: the statements that store what was issued run before it
// (docs/architecture.md#hot-paths). Checking an access token is verify-access-token.ts.
import { createHash, randomUUID } from 'node:crypto';
import type { Context } from '../../../context.ts';
import { epochSeconds } from '../../../lib/clock.ts';
import type { SigningAlg } from '../../../keys/signing-keys.ts';
import { acrOf } from '../acr.ts';
import { audienceOf } from '../resources.ts';

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const ID_TOKEN_TTL_SECONDS = 3600;

export interface TokenSubject {
  client: {
    id: string;
    clientId: string;
    organizationId: string;
    idTokenSignedResponseAlg: string;
    grantTypes: string[];
  };
  grantId: string;
  userId: string | null;
  organizationId: string;
  scope: string[];
  /** The resources (RFC 8707) the access token is for: its audience; none for the client itself. */
  resources: string[];
  authTime: Date | null;
  /** How the sign-in behind the grant was made (RFC 8176); empty for a machine client, or a grant older than amr. */
  amr: string[];
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
      aud: audienceOf(s.resources, s.client.clientId),
      client_id: s.client.clientId,
      scope: s.scope.join(' '),
      iat: epochSeconds(now),
      exp: epochSeconds(now) + ACCESS_TOKEN_TTL_SECONDS,
      jti: randomUUID(),
      org_id: s.organizationId,
      gid: s.grantId,
      sv: s.sessionVersion,
      ...(s.authTime ? { auth_time: epochSeconds(s.authTime) } : {}),
      // What a platform-wide token's organizations ask of the sign-in (a second factor) is asked at each use.
      ...(s.amr.length ? { amr: s.amr } : {}),
    },
    'RS256',
    'at+jwt',
  );
}

/** The left half of the access token's hash, with the hash of the ID token's algorithm (OIDC Core 3.1.3.6). */
function atHash(accessToken: string, alg: SigningAlg): string {
  const digest = createHash(alg === 'EdDSA' ? 'sha512' : 'sha256')
    .update(accessToken)
    .digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

/** `claims`: the user's claims by scope (claimsFor), read by the statement that issued the tokens. */
export async function mintIdToken(
  ctx: Context,
  s: TokenSubject,
  accessToken: string,
  nonce: string | null,
  claims: Record<string, unknown>,
): Promise<string> {
  const now = ctx.clock.now();
  const alg = s.client.idTokenSignedResponseAlg as SigningAlg;
  return ctx.keys.sign(
    {
      ...claims,
      iss: ctx.settings.issuer(),
      aud: s.client.clientId,
      azp: s.client.clientId,
      iat: epochSeconds(now),
      exp: epochSeconds(now) + ID_TOKEN_TTL_SECONDS,
      ...(s.authTime ? { auth_time: epochSeconds(s.authTime) } : {}),
      ...(s.amr.length ? { amr: s.amr, acr: acrOf(s.amr) } : {}),
      ...(nonce ? { nonce } : {}),
      at_hash: atHash(accessToken, alg),
    },
    alg,
    'JWT',
  );
}

/** Signs what a token response carries; the refresh token, if any, was stored already. */
export async function signTokens(
  ctx: Context,
  s: TokenSubject,
  options: { refreshToken?: string | null; idToken?: { nonce: string | null; claims: Record<string, unknown> } | null },
): Promise<TokenResponse> {
  const accessToken = await mintAccessToken(ctx, s);
  const response: TokenResponse = {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    scope: s.scope.join(' '),
  };
  if (options.refreshToken) response.refresh_token = options.refreshToken;
  if (options.idToken)
    response.id_token = await mintIdToken(ctx, s, accessToken, options.idToken.nonce, options.idToken.claims);
  return response;
}
