// What a grant handler of the token endpoint is (token.service.ts picks one by grant_type), and what the grants that
// redeem a code or a refresh token share: a required parameter, the checks their statement reports, the subject of
// the tokens and their signing, and how a remembered client is answered (docs/architecture.md#hot-paths).
import type { Context } from '../../../context.ts';
import { claimsFor } from '../claims.service.ts';
import type { AuthenticatedClient } from '../client-authentication.ts';
import { InvalidGrant, InvalidRequest, OAuthError } from '../oauth.errors.ts';
import { parseResources } from '../resources.ts';
import { parseScope } from '../scopes.ts';
import { signTokens, type TokenResponse, type TokenSubject } from './sign.ts';
import { refreshIssued, type NextRefresh, type Redeemed } from './statements.ts';

export type Params = Record<string, unknown>;

/**
 * What a grant's statement gave: the signed tokens, or 'unredeemed': nothing was redeemed (the code or refresh token
 * is spent, expired or unknown, or the client's row is no longer the version that was read).
 */
export type Redemption = TokenResponse | 'unredeemed';

/** A grant, for a client authenticated from a fresh read: the tokens, or the refusal. */
export interface Grant {
  redeem(ctx: Context, client: AuthenticatedClient, params: Params): Promise<TokenResponse>;
}

/**
 * A grant that redeems a code or a refresh token. Its statement confirms the client's row version, so it may serve
 * a client the process remembers (remembered-clients.ts): then 'unredeemed' says the client may be stale, and the
 * token endpoint authenticates afresh and retries once.
 */
export interface RedeemingGrant extends Grant {
  redeemRemembered(ctx: Context, client: AuthenticatedClient, params: Params): Promise<Redemption>;
}

/** The steps of a grant that redeems a code or a refresh token, in order. */
interface RedeemingSteps<R> {
  /** The grant's parameters, or the error they earn (thrown only once the client is known). */
  read(params: Params): R | OAuthError;
  /**
   * Its one statement, then the checks it reported, then the signed tokens. `lastTry`: the client was read afresh,
   * and nothing redeemed is refused (a remembered client's miss is tried again after a fresh read).
   */
  issue(ctx: Context, client: AuthenticatedClient, request: R, lastTry: boolean): Promise<Redemption>;
  /** Nothing redeemed for a client read afresh: a replay ends its grant (endReplayedGrant), and the error says why. */
  refuse(ctx: Context, client: AuthenticatedClient, request: R): Promise<never>;
}

export function redeemingGrant<R>(steps: RedeemingSteps<R>): RedeemingGrant {
  return {
    async redeem(ctx, client, params) {
      const request = steps.read(params);
      if (request instanceof OAuthError) throw request;
      const outcome = await steps.issue(ctx, client, request, true);
      return outcome === 'unredeemed' ? steps.refuse(ctx, client, request) : outcome;
    },
    // Not async: on the hot path the statement's promise is handed on as it is.
    redeemRemembered(ctx, client, params) {
      const request = steps.read(params);
      // Refused for its parameters before anything was redeemed: whether the client or the request is at fault is for
      // the fresh read to say (a client disabled elsewhere gets invalid_client, as without the remembered client).
      if (request instanceof OAuthError) return Promise.resolve('unredeemed');
      return steps.issue(ctx, client, request, false);
    },
  };
}

/** A required parameter of at most 4096 characters, or the invalid_request it earns. */
export function required(value: unknown, name: string): string | InvalidRequest {
  if (typeof value !== 'string' || value.length === 0) return new InvalidRequest(`${name} is required`);
  if (value.length > 4096) return new InvalidRequest(`${name} is too long`);
  return value;
}

/**
 * The resources a token request asks for (RFC 8707), to narrow those of its grant; none keeps them all. A value that
 * is no absolute URI is the invalid_target it earns.
 */
export function askedResources(params: Params): string[] | OAuthError {
  try {
    return parseResources(params.resource);
  } catch (error) {
    if (error instanceof OAuthError) return error;
    throw error;
  }
}

/** The grant still stands, the user has not signed out everywhere and is still a member (else the statement ended the grant). */
export function assertStillValid(redeemed: Redeemed): void {
  if (!redeemed.grant_live) throw new InvalidGrant('The grant has been revoked');
  if (!redeemed.session_current) throw new InvalidGrant('The user has signed out everywhere since this was issued');
  if (!redeemed.member) throw new InvalidGrant('The user is no longer a member of the organization');
}

/** `resources`: those the request asked for (a part of the redeemed row's, checked by its statement), else all of them. */
export function subjectOf(
  client: AuthenticatedClient,
  r: Redeemed,
  scope: string[],
  resources: string[],
): TokenSubject {
  return {
    client,
    grantId: r.grant_id,
    userId: r.user_id,
    organizationId: r.organization_id,
    scope,
    resources: resources.length ? resources : r.resources,
    authTime: r.auth_time,
    amr: r.amr,
    sessionVersion: r.session_version,
  };
}

/**
 * The tokens of a redeemed grant that still stands: the next refresh token where the statement stored it, and an ID
 * token (with `nonce`, the authorization request's) where openid is granted. `resources`: those the request asked for.
 */
export function tokensOf(
  ctx: Context,
  client: AuthenticatedClient,
  redeemed: Redeemed,
  refresh: { value: string; stored: NextRefresh } | null,
  nonce: string | null,
  resources: string[],
): Promise<TokenResponse> {
  assertStillValid(redeemed);
  const scope = parseScope(redeemed.scope);
  return signTokens(ctx, subjectOf(client, redeemed, scope, resources), {
    refreshToken: refresh && refreshIssued(client, refresh.stored, redeemed) ? refresh.value : undefined,
    idToken: scope.includes('openid') ? { nonce, claims: claimsFor(redeemed, scope) } : null,
  });
}
