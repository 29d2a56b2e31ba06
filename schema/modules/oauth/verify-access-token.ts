// Checking an access token (RFC 9068, RFC 6750): our signature first, held in memory for tokens already seen, then
// one statement confirms that its grant stands (docs/architecture.md#identity-sessions-and-tokens). Actor
// resolution, the licence check, userinfo, introspection and revocation all check tokens here. A token asked for
// another resource (RFC 8707: its `aud` names that resource, not the client) is that resource's alone: Tessera's own
// API and userinfo refuse it, so a resource server that receives one cannot replay it here; introspection still
// describes it, for the resource server that asks (docs/architecture.md#apps-without-secrets).
import type { Context } from '../../context.ts';
import { hotStatement, Prisma } from '../../db.ts';
import { InvalidToken } from './oauth.errors.ts';
import { CLAIM_COLUMNS, type ClaimSource } from './claims.service.ts';
import { revealedProducts, revealsLicenses } from './product-scopes.ts';

const CLAIMS = Prisma.raw(CLAIM_COLUMNS);

/** The claims of an access token whose signature, type, issuer and lifetime are ours; no database involved. */
export interface SignedAccessToken {
  sub: string;
  grantId: string;
  clientId: string;
  organizationId: string;
  sessionVersion: unknown;
  scope: string[];
  /** Its `aud`, as a list: the client id, or the resources it was asked for (RFC 8707). */
  audience: string[];
  /** How the person signed in (RFC 8176, RFC 9068 2.2.1), as the token was issued; empty when it says nothing. */
  amr: string[];
  exp: number;
  iat: number;
}

/** Our signature (never none or HS256), at+jwt, our issuer, not expired; else invalid_token. */
export async function verifyAccessTokenSignature(ctx: Context, token: string): Promise<SignedAccessToken> {
  if (token.length > 8192 || token.split('.').length !== 3) throw new InvalidToken();
  let payload;
  try {
    payload = await ctx.keys.verifyRemembered(token, {
      issuer: ctx.settings.issuer(),
      typ: 'at+jwt',
      currentDate: ctx.clock.now(),
    });
  } catch {
    throw new InvalidToken();
  }
  const {
    gid,
    client_id: clientId,
    org_id: organizationId,
    sv,
    scope,
    amr,
    sub,
    exp,
    iat,
    aud,
  } = payload as Record<string, unknown>;
  if (
    typeof gid !== 'string' ||
    typeof clientId !== 'string' ||
    typeof organizationId !== 'string' ||
    typeof sub !== 'string'
  )
    throw new InvalidToken();
  return {
    sub,
    grantId: gid,
    clientId,
    organizationId,
    sessionVersion: sv,
    scope: typeof scope === 'string' ? scope.split(' ').filter(Boolean) : [],
    audience: (Array.isArray(aud) ? aud : [aud]).filter((a): a is string => typeof a === 'string'),
    amr: Array.isArray(amr) ? amr.filter((m): m is string => typeof m === 'string') : [],
    exp: Number(exp),
    iat: Number(iat),
  };
}

/** The token is for Tessera itself: its audience is its client (no resource was asked), or names our issuer. */
export function forTessera(ctx: Context, signed: SignedAccessToken): boolean {
  const { audience } = signed;
  return (audience.length === 1 && audience[0] === signed.clientId) || audience.includes(ctx.settings.issuer());
}

export interface VerifiedAccessToken extends SignedAccessToken {
  userId: string | null;
  clientDbId: string;
  /** The organization that owns the client (introspection answers only within it). */
  clientOrganizationId: string;
  /** The user's claim fields, read in the same statement (null for a machine client's token). */
  claims: ClaimSource | null;
  /** The client is Tessera's own command-line client (cli-client.ts). */
  platformWide: boolean;
}

interface GrantRow extends ClaimSource {
  stands: boolean;
  user_id: string;
  grant_user_id: string | null;
  client_db_id: string;
  client_organization_id: string;
  platform_wide: boolean;
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
 * member of the token's organization, unless the client is platform-wide (cli-client.ts): its tokens act in each of
 * the person's organizations, which the caller's memberships tell (auth/access.ts).
 */
export function tokenGrantStands(keys: TokenGrantKeys): Prisma.Sql {
  return Prisma.sql`(g.revoked_at is null and c.enabled and c.client_id = ${keys.clientId}::text
    and (g.user_id is null or (u.session_version = ${keys.sessionVersion}::int and (m.role is not null or c.platform_wide))))`;
}

/**
 * Checks an access token: its signature (verifyAccessTokenSignature), that it is for Tessera (forTessera) unless
 * `anyAudience` (introspection), then in one statement that it still stands (tokenGrantStands). Also reads the user's
 * claim fields, so userinfo needs no second query; with `products` (userinfo) also the licensed products the scope
 * reveals, in the same statement. Else invalid_token.
 */
export async function verifyAccessToken(
  ctx: Context,
  token: string,
  options: { products?: boolean; anyAudience?: boolean } = {},
): Promise<VerifiedAccessToken> {
  const signed = await verifyAccessTokenSignature(ctx, token);
  if (!options.anyAudience && !forTessera(ctx, signed))
    throw new InvalidToken('The access token is for another resource');
  const reveal = options.products ? revealsLicenses(signed.scope) : null;
  const statement = reveal ? GRANT_WITH_PRODUCTS : GRANT;
  const [row] = await statement(ctx.db, {
    ...tokenGrantKeys(signed),
    all: reveal?.all ?? false,
    slugs: reveal?.slugs ?? [],
    now: ctx.clock.now(),
  });
  if (!row?.stands) throw new InvalidToken();
  return {
    ...signed,
    userId: row.grant_user_id,
    clientDbId: row.client_db_id,
    clientOrganizationId: row.client_organization_id,
    claims: row.grant_user_id ? row : null,
    platformWide: row.platform_wide,
  };
}

/** verifyAccessToken's statement; with `products`, also the licensed products the scope reveals (`all`, `slugs`). */
function grantStatement(products: boolean) {
  return hotStatement<TokenGrantKeys & { all: boolean; slugs: string[]; now: Date }, GrantRow>((p) => {
    const reveal = products ? { all: Prisma.sql`${p.all}::boolean`, slugs: Prisma.sql`${p.slugs}::text[]` } : null;
    return Prisma.sql`
      select ${tokenGrantStands(p)} as stands, g.user_id as grant_user_id, coalesce(g.user_id, '') as user_id,
             c.id as client_db_id, c.organization_id as client_organization_id, c.platform_wide,
             ${p.organizationId}::text as organization_id, ${CLAIMS},
             ${revealedProducts(reveal, Prisma.sql`g.user_id`, Prisma.sql`${p.organizationId}::text`, p.now)} as products
      from ${tokenGrantFrom(p, Prisma.sql`left join organizations o on o.id = ${p.organizationId}::text`)}`;
  });
}
const GRANT = grantStatement(false);
const GRANT_WITH_PRODUCTS = grantStatement(true);
