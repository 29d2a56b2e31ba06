// The authorization_code grant (RFC 6749 4.1.3, with PKCE, RFC 7636 4.6). One statement consumes the code, checks it
// (redirect_uri, code_verifier, the grant, the session version, the membership) and stores what is issued; a code
// that is not redeemed but was used already by this client ends its whole grant (OAuth 2.0 Security BCP 4.14).
import { createHash } from 'node:crypto';
import type { Context } from '../../../context.ts';
import { Prisma } from '../../../db.ts';
import { sha256 } from '../../../lib/crypto.ts';
import { InvalidGrant, InvalidRequest, InvalidTarget, OAuthError } from '../oauth.errors.ts';
import { askedResources, redeemingGrant, required, tokensOf, type Params } from './grant.ts';
import { nextRefresh } from './refresh-token.ts';
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

/** RFC 7636 4.1: what a code_verifier may be. */
const PKCE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

export const authorizationCode = redeemingGrant<CodeRedemption>({
  read(params: Params) {
    const code = required(params.code, 'code');
    if (code instanceof InvalidRequest) return code;
    const redirectUri = required(params.redirect_uri, 'redirect_uri');
    if (redirectUri instanceof InvalidRequest) return redirectUri;
    const resources = askedResources(params);
    if (resources instanceof OAuthError) return resources;
    const verifier = params.code_verifier;
    const usable = typeof verifier === 'string' && PKCE_VERIFIER.test(verifier) ? verifier : null;
    return {
      hash: sha256(code),
      redirectUri,
      verifierGiven: verifier !== undefined,
      s256: usable && createHash('sha256').update(usable).digest('base64url'),
      plain: usable,
      resources,
    };
  },

  async issue(ctx, client, code, lastTry) {
    const refresh = nextRefresh(ctx, client);
    const redeemed = await redeemCode(ctx, client, code, refresh?.stored ?? null, lastTry);
    if (!redeemed) return 'unredeemed';
    if (!redeemed.redirect_ok) throw new InvalidGrant('redirect_uri does not match the authorization request');
    if (!redeemed.pkce_ok) {
      throw new InvalidGrant(
        redeemed.has_challenge
          ? 'PKCE verification failed'
          : 'code_verifier given, but the authorization request had no code_challenge',
      );
    }
    return tokensOf(ctx, client, redeemed, refresh, redeemed.nonce, code.resources);
  },

  async refuse(ctx, client, code) {
    const seen = await endReplayedGrant(ctx, client, 'code', code.hash, { resources: code.resources });
    // Another client's code is refused without being spent: its rightful client can still use it.
    if (seen.otherClient) throw new InvalidGrant('Authorization code was issued to another client');
    // Refused before anything was spent: the same code still works for resources it was authorized for.
    if (seen.beyondTarget) throw new InvalidTarget('The resource was not named in the authorization request');
    throw new InvalidGrant(seen.found ? 'Authorization code has expired' : 'Authorization code is invalid');
  },
});

interface CodeRedemption {
  hash: string;
  redirectUri: string;
  /** Whether the request carried a code_verifier at all, and what it implies for each challenge method. */
  verifierGiven: boolean;
  s256: string | null;
  plain: string | null;
  /** The resources asked for, within the authorization request's (RFC 8707 2.2); none: all of them. */
  resources: string[];
}

/**
 * Consumes an authorization code and, when every check passes, issues from it. Null: no usable code, or a client
 * row that is no longer the version `client` was read at.
 */
function redeemCode(
  ctx: Context,
  client: RedeemingClient,
  code: CodeRedemption,
  next: NextRefresh | null,
  lastTry: boolean,
): Promise<Redeemed | null> {
  return REDEEM_CODE(ctx, client, { ...issueValues(ctx, client, next), ...code }, lastTry);
}

export const REDEEM_CODE = redeemingStatement<CodeRedemption>(
  (p, how) => sql`
    with consumed as (
      update authorization_codes set used_at = ${p.now}::timestamp(3)
      where code_hash = ${p.hash}::text and client_id = ${p.clientRowId}::text and used_at is null
        and expires_at > ${p.now}::timestamp(3) and ${clientUnchanged(p)} and ${redeemable(how)}
        and resources @> ${p.resources}::text[]
      returning grant_id, user_id, organization_id, redirect_uri, scope, resources, nonce, code_challenge, code_challenge_method, auth_time, amr, session_version
    ), subject as (
      select c.grant_id, c.nonce, c.auth_time, c.amr, c.session_version,
        c.redirect_uri = ${p.redirectUri}::text as redirect_ok,
        c.code_challenge is not null as has_challenge,
        case when c.code_challenge is null then not ${p.verifierGiven}::boolean
             when c.code_challenge_method = 'S256' then coalesce(c.code_challenge = ${p.s256}::text, false)
             else coalesce(c.code_challenge = ${p.plain}::text, false) end as pkce_ok,
        ${subjectColumns(p, how)}
      ${subjectFrom(p.now, how)}
    )
    ${issueAndEnd(p, 'authorization_code', how)}`,
);
