// The refresh_token grant (RFC 6749 6), and what a refresh token is: opaque, prefixed, stored as SHA-256, rotated on
// every use (docs/architecture.md#identity-sessions-and-tokens). One statement consumes the token, checks it (the
// grant, the session version, the membership) and stores the next one; a refresh token that is not redeemed but was
// used already by this client ends its whole grant (OAuth 2.0 Security BCP 4.13). A refusal that is the client's to
// correct spends nothing: the consuming UPDATE itself refuses a scope beyond the token's (and another client's token),
// so the client's retry is no replay. A narrower scope narrows this response's tokens only: the next refresh token
// keeps the scope of the one presented (RFC 6749 6).
import type { Context } from '../../../context.ts';
import { Prisma } from '../../../db.ts';
import { addSeconds } from '../../../lib/clock.ts';
import { randomToken, sha256 } from '../../../lib/crypto.ts';
import { InvalidGrant, InvalidScope, InvalidTarget, OAuthError } from '../oauth.errors.ts';
import { parseScope } from '../scopes.ts';
import { askedResources, redeemingGrant, required, tokensOf, type Params } from './grant.ts';
import {
  clientUnchanged,
  endReplayedGrant,
  issueAndEnd,
  issueValues,
  redeemable,
  redeemingStatement,
  subjectColumns,
  subjectFrom,
  type NextRefresh,
  type Redeemed,
  type RedeemingClient,
} from './statements.ts';

const sql = Prisma.sql;

export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
export const REFRESH_TOKEN_PREFIX = 'tsr_';

/** The refresh token to issue with this response, made before the statement that stores it. */
export function nextRefresh(
  ctx: Context,
  client: { grantTypes: string[] },
): { value: string; stored: NextRefresh } | null {
  if (!client.grantTypes.includes('refresh_token')) return null;
  const value = randomToken(REFRESH_TOKEN_PREFIX);
  return { value, stored: { hash: sha256(value), expiresAt: addSeconds(ctx.clock.now(), REFRESH_TOKEN_TTL_SECONDS) } };
}

/**
 * A refresh request: the token's hash, the scope asked (a subset of the grant's; none asked keeps it whole) and the
 * resources asked (RFC 8707 2.2: some of the grant's; none asked keeps them all).
 */
interface RefreshRequest {
  hash: string;
  asked: string[];
  resources: string[];
}

export const refreshToken = redeemingGrant<RefreshRequest>({
  read(params: Params) {
    const token = required(params.refresh_token, 'refresh_token');
    if (token instanceof OAuthError) return token;
    const resources = askedResources(params);
    if (resources instanceof OAuthError) return resources;
    return {
      hash: sha256(token),
      asked: typeof params.scope === 'string' && params.scope ? parseScope(params.scope) : [],
      resources,
    };
  },

  async issue(ctx, client, request, lastTry) {
    const refresh = nextRefresh(ctx, client);
    const redeemed = await redeemRefreshToken(ctx, client, request, refresh?.stored ?? null, lastTry);
    if (!redeemed) return 'unredeemed';
    return tokensOf(ctx, client, redeemed, refresh, null, request.resources);
  },

  async refuse(ctx, client, request) {
    const seen = await endReplayedGrant(ctx, client, 'refresh_token', request.hash, {
      scope: request.asked,
      resources: request.resources,
    });
    // Refused before anything was spent: the same token still works for a scope and resources within its own.
    if (seen.beyondScope) throw new InvalidScope();
    if (seen.beyondTarget) throw new InvalidTarget('The resource is not one this grant was authorized for');
    throw new InvalidGrant('Refresh token is invalid, expired or revoked');
  },
});

/** Consumes a refresh token and, when every check passes, issues from it with the scope asked (a subset) or its own. */
function redeemRefreshToken(
  ctx: Context,
  client: RedeemingClient,
  request: RefreshRequest,
  next: NextRefresh | null,
  lastTry: boolean,
): Promise<Redeemed | null> {
  return REDEEM_REFRESH_TOKEN(
    ctx,
    client,
    {
      ...issueValues(ctx, client, next),
      hash: request.hash,
      asked: request.asked.join(' '),
      resources: request.resources,
    },
    lastTry,
  );
}

/**
 * SQL: the scope of this response's tokens. None asked: all the consumed token keeps (k.scope, without the products
 * whose license is gone). A narrower one: what of it k.scope holds, in the order asked; the consuming UPDATE has
 * refused one beyond the token's own.
 */
const narrowed = (asked: unknown) => sql`case when ${asked}::text = '' then k.scope else array_to_string(array(
    select x from unnest(string_to_array(${asked}::text, ' ')) with ordinality as t(x, n)
    where x = any(string_to_array(k.scope, ' ')) order by n), ' ') end`;

export const REDEEM_REFRESH_TOKEN = redeemingStatement<{ hash: string; asked: string; resources: string[] }>(
  (p, how) => sql`
    with consumed as (
      update refresh_tokens set used_at = ${p.now}::timestamp(3)
      where token_hash = ${p.hash}::text and client_id = ${p.clientRowId}::text and used_at is null and revoked_at is null
        and expires_at > ${p.now}::timestamp(3) and ${clientUnchanged(p)} and ${redeemable(how)}
        and string_to_array(scope, ' ') @> string_to_array(${p.asked}::text, ' ') and resources @> ${p.resources}::text[]
      returning grant_id, user_id, organization_id, scope, resources, auth_time, amr, session_version
    ), subject as (
      select c.grant_id, null::text as nonce, c.auth_time, c.amr, c.session_version,
        true as redirect_ok, false as has_challenge, true as pkce_ok,
        ${subjectColumns(p, how)}
      ${subjectFrom(p.now, how, narrowed(p.asked))}
    )
    ${issueAndEnd(p, 'refresh_token', how)}`,
);
