// Minting and checking tokens. Access tokens are RFC 9068 JWTs (typ at+jwt) signed with our current key;
// each names its grant, so revoking the grant (a replayed code, a revoked consent, a disabled client, a member
// removed) ends it, and carries the user's session version, so a password change ends it too. Signing never
// happens inside a transaction: the statements that store what was issued run before or after it.
import { createHash, randomUUID } from 'node:crypto';
import type { Context } from '../../context.ts';
import { hotStatement, Prisma } from '../../db.ts';
import { epochSeconds } from '../../lib/clock.ts';
import type { SigningAlg } from '../../keys/signing-keys.ts';
import { InvalidToken } from './oauth.errors.ts';
import { CLAIM_COLUMNS, claimsFor, type ClaimSource } from './claims.service.ts';
import { revealedProducts, revealsLicenses } from './product-scopes.ts';

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
export const ID_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_PREFIX = 'tsr_';

type Tx = Prisma.TransactionClient;
const CLAIMS = Prisma.raw(CLAIM_COLUMNS);

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

/** `claims`: the user's claims by scope (claimsFor), read by the statement that issued the tokens. */
export async function mintIdToken(ctx: Context, s: TokenSubject, accessToken: string, nonce: string | null, claims: Record<string, unknown>): Promise<string> {
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
  const response: TokenResponse = { access_token: accessToken, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_SECONDS, scope: s.scope.join(' ') };
  if (options.refreshToken) response.refresh_token = options.refreshToken;
  if (options.idToken) response.id_token = await mintIdToken(ctx, s, accessToken, options.idToken.nonce, options.idToken.claims);
  return response;
}

/** The claims of an access token whose signature, type, issuer and lifetime are ours; no database involved. */
export interface SignedAccessToken {
  sub: string;
  grantId: string;
  clientId: string;
  organizationId: string;
  sessionVersion: unknown;
  scope: string[];
  exp: number;
  iat: number;
}

/** Our signature (never none or HS256), at+jwt, our issuer, not expired; else invalid_token. */
export async function verifyAccessTokenSignature(ctx: Context, token: string): Promise<SignedAccessToken> {
  if (token.length > 8192 || token.split('.').length !== 3) throw new InvalidToken();
  let payload;
  try {
    payload = await ctx.keys.verifyRemembered(token, { issuer: ctx.settings.issuer(), typ: 'at+jwt', currentDate: ctx.clock.now() });
  } catch {
    throw new InvalidToken();
  }
  const { gid, client_id: clientId, org_id: organizationId, sv, scope, sub, exp, iat } = payload as Record<string, unknown>;
  if (typeof gid !== 'string' || typeof clientId !== 'string' || typeof organizationId !== 'string' || typeof sub !== 'string') throw new InvalidToken();
  return {
    sub, grantId: gid, clientId, organizationId, sessionVersion: sv,
    scope: typeof scope === 'string' ? scope.split(' ').filter(Boolean) : [],
    exp: Number(exp), iat: Number(iat),
  };
}

export interface VerifiedAccessToken extends SignedAccessToken {
  userId: string | null;
  clientDbId: string;
  /** The organization that owns the client (introspection answers only within it). */
  clientOrganizationId: string;
  /** The user's claim fields, read in the same statement (null for a machine client's token). */
  claims: ClaimSource | null;
}

interface GrantRow extends ClaimSource {
  stands: boolean;
  user_id: string;
  grant_user_id: string | null;
  client_db_id: string;
  client_organization_id: string;
}

/** What a statement needs of a signed access token to find its grant and tell whether it stands. */
export interface TokenGrantKeys {
  grantId: string;
  clientId: string;
  organizationId: string;
  /** The user's session version when the token was issued (an integer, or null if it carries none). */
  sessionVersion: number | null;
}

export const tokenGrantKeys = (signed: SignedAccessToken): TokenGrantKeys => ({
  grantId: signed.grantId,
  clientId: signed.clientId,
  organizationId: signed.organizationId,
  sessionVersion: Number.isInteger(signed.sessionVersion) ? (signed.sessionVersion as number) : null,
});

/**
 * SQL, the rows an access token's grant is read from: the grant `g`, its client `c`, its user `u` and the user's
 * membership `m` of the token's organization. Ends with the where clause: one row, or none for an unknown grant.
 */
export function tokenGrantFrom(keys: TokenGrantKeys, moreJoins: Prisma.Sql = Prisma.empty): Prisma.Sql {
  return Prisma.sql`oauth_grants g
    join oauth_clients c on c.id = g.client_id
    left join users u on u.id = g.user_id
    left join memberships m on m.user_id = g.user_id and m.organization_id = ${keys.organizationId}::text
    ${moreJoins}
    where g.id = ${keys.grantId}::text`;
}

/**
 * SQL over tokenGrantFrom's rows: the token still stands. Its grant is not revoked, its client is enabled and
 * is the one it names; for a user's token, the user's session version has not moved and the user is still a
 * member of the token's organization.
 */
export function tokenGrantStands(keys: TokenGrantKeys): Prisma.Sql {
  return Prisma.sql`(g.revoked_at is null and c.enabled and c.client_id = ${keys.clientId}::text
    and (g.user_id is null or (u.session_version = ${keys.sessionVersion}::int and m.role is not null)))`;
}

/**
 * Checks an access token: its signature (verifyAccessTokenSignature), then in one statement that it still
 * stands (tokenGrantStands). Also reads the user's claim fields, so userinfo needs no second query; with
 * `products` (userinfo) also the licensed products the scope reveals, in the same statement. Else invalid_token.
 */
export async function verifyAccessToken(ctx: Context, token: string, options: { products?: boolean } = {}): Promise<VerifiedAccessToken> {
  const signed = await verifyAccessTokenSignature(ctx, token);
  const reveal = options.products ? revealsLicenses(signed.scope) : null;
  const statement = reveal ? GRANT_WITH_PRODUCTS : GRANT;
  const [row] = await statement(ctx.db, { ...tokenGrantKeys(signed), all: reveal?.all ?? false, slugs: reveal?.slugs ?? [], now: ctx.clock.now() });
  if (!row?.stands) throw new InvalidToken();
  return {
    ...signed,
    userId: row.grant_user_id,
    clientDbId: row.client_db_id,
    clientOrganizationId: row.client_organization_id,
    claims: row.grant_user_id ? row : null,
  };
}

/** verifyAccessToken's statement; with `products`, also the licensed products the scope reveals (`all`, `slugs`). */
function grantStatement(products: boolean) {
  return hotStatement<TokenGrantKeys & { all: boolean; slugs: string[]; now: Date }, GrantRow>((p) => {
    const reveal = products ? { all: Prisma.sql`${p.all}::boolean`, slugs: Prisma.sql`${p.slugs}::text[]` } : null;
    return Prisma.sql`
      select ${tokenGrantStands(p)} as stands, g.user_id as grant_user_id, coalesce(g.user_id, '') as user_id,
             c.id as client_db_id, c.organization_id as client_organization_id,
             ${p.organizationId}::text as organization_id, ${CLAIMS},
             ${revealedProducts(reveal, Prisma.sql`g.user_id`, Prisma.sql`${p.organizationId}::text`, p.now)} as products
      from ${tokenGrantFrom(p, Prisma.sql`left join organizations o on o.id = ${p.organizationId}::text`)}`;
  });
}
const GRANT = grantStatement(false);
const GRANT_WITH_PRODUCTS = grantStatement(true);

/** The user's claims for an access token's scope (userinfo): from the row verifyAccessToken read. */
export function accessTokenClaims(token: VerifiedAccessToken): Record<string, unknown> {
  return token.claims ? claimsFor(token.claims, token.scope) : { sub: token.sub };
}

/** Ends a grant and everything issued from it. */
export async function revokeGrant(ctx: Context, tx: Tx | Context['db'], grantId: string): Promise<void> {
  const now = ctx.clock.now();
  await tx.oAuthGrant.updateMany({ where: { id: grantId, revokedAt: null }, data: { revokedAt: now } });
  await tx.refreshToken.updateMany({ where: { grantId, revokedAt: null }, data: { revokedAt: now } });
}
