// The token endpoint's grants (RFC 6749 4.1.3, 6, 4.4). Client authentication is client_secret_post only.
// Each grant is one statement after client authentication (token/statements.ts), and a code exchange or refresh for
// a client the process remembers is that one statement alone (remembered-clients.ts): a code or refresh token is
// consumed with a conditional UPDATE that also checks the grant, the session version and the membership and
// stores what is issued; a replayed code or refresh token revokes its whole grant (OAuth 2.0 Security BCP 4.14,
// 4.13). Tokens are signed after the statement, holding no connection.
import { createHash } from 'node:crypto';
import type { Context } from '../../context.ts';
import { sha256 } from '../../lib/crypto.ts';
import { authenticateClient, rememberedClient } from './client-authentication.ts';
import { InvalidGrant, InvalidRequest, InvalidScope, UnauthorizedClient, UnsupportedGrantType } from './oauth.errors.ts';
import { parseScope } from './scopes.ts';
import { claimsFor } from './claims.service.ts';
import { signTokens, type TokenResponse, type TokenSubject } from './token/sign.ts';
import { nextRefresh } from './token/refresh-token.ts';
import { endReplayedGrant, recordClientCredentialsGrant, redeemCode, redeemRefreshToken, type Redeemed } from './token/statements.ts';

type Params = Record<string, unknown>;
type Client = Awaited<ReturnType<typeof authenticateClient>>;

/** RFC 7636 4.1: what a code_verifier may be. */
const PKCE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

const text = (value: unknown, name: string): string => {
  if (typeof value !== 'string' || value.length === 0) throw new InvalidRequest(`${name} is required`);
  if (value.length > 4096) throw new InvalidRequest(`${name} is too long`);
  return value;
};

export async function exchange(ctx: Context, params: Params): Promise<TokenResponse> {
  const grantType = text(params.grant_type, 'grant_type');
  // A code or refresh token redeemed for a client this process remembers: one statement, which also confirms the
  // client's row is unchanged. When it is not (or nothing was redeemed), the request is answered from a fresh read.
  const remembered = grantType === 'authorization_code' || grantType === 'refresh_token'
    ? rememberedClient(ctx, params.client_id, params.client_secret, grantType) : undefined;
  if (remembered) {
    const answer = await (grantType === 'authorization_code' ? authorizationCode : refreshToken)(ctx, remembered, params, { guess: true })
      // Refused for its parameters before anything was redeemed: whether the client or the request is at fault is for
      // the fresh read to say (a client disabled elsewhere gets invalid_client, as without the guess).
      .catch((error: unknown) => {
        if (error instanceof InvalidRequest) return null;
        throw error;
      });
    if (answer) return answer;
    ctx.rememberedClients.forget(remembered.clientId);
  }
  const client = await authenticateClient(ctx, params.client_id, params.client_secret);
  if (!['authorization_code', 'refresh_token', 'client_credentials'].includes(grantType)) throw new UnsupportedGrantType();
  if (!client.grantTypes.includes(grantType)) throw new UnauthorizedClient();
  return grantType === 'authorization_code' ? (await authorizationCode(ctx, client, params))!
    : grantType === 'refresh_token' ? (await refreshToken(ctx, client, params))!
    : clientCredentials(ctx, client, params);
}

/**
 * `guess`: the client is a remembered one (rememberedClient). Then a code or refresh token that was not redeemed
 * answers null instead of an error, since the client's row may be what changed; the caller asks again from a fresh read.
 */
interface Redeeming {
  guess?: boolean;
}

async function authorizationCode(ctx: Context, client: Client, params: Params, { guess = false }: Redeeming = {}): Promise<TokenResponse | null> {
  const code = text(params.code, 'code');
  const redirectUri = text(params.redirect_uri, 'redirect_uri');
  const verifier = params.code_verifier;
  const usable = typeof verifier === 'string' && PKCE_VERIFIER.test(verifier) ? verifier : null;
  const hash = sha256(code);
  const refresh = nextRefresh(ctx, client);
  const redeemed = await redeemCode(ctx, client, {
    hash,
    redirectUri,
    verifierGiven: verifier !== undefined,
    s256: usable && createHash('sha256').update(usable).digest('base64url'),
    plain: usable,
  }, refresh?.stored ?? null);
  if (!redeemed && guess) return null;
  if (!redeemed) {
    const seen = await endReplayedGrant(ctx, client, 'code', hash);
    // Another client's code is refused without being spent: its rightful client can still use it.
    if (seen.otherClient) throw new InvalidGrant('Authorization code was issued to another client');
    throw new InvalidGrant(seen.found ? 'Authorization code has expired' : 'Authorization code is invalid');
  }
  if (!redeemed.redirect_ok) throw new InvalidGrant('redirect_uri does not match the authorization request');
  if (!redeemed.pkce_ok) {
    throw new InvalidGrant(redeemed.has_challenge ? 'PKCE verification failed' : 'code_verifier given, but the authorization request had no code_challenge');
  }
  assertStillValid(redeemed);
  const scope = parseScope(redeemed.scope);
  return signTokens(ctx, subjectOf(client, redeemed, scope), {
    refreshToken: refresh?.value,
    idToken: scope.includes('openid') ? { nonce: redeemed.nonce, claims: claimsFor(redeemed, scope) } : null,
  });
}

async function refreshToken(ctx: Context, client: Client, params: Params, { guess = false }: Redeeming = {}): Promise<TokenResponse | null> {
  const token = text(params.refresh_token, 'refresh_token');
  const asked = typeof params.scope === 'string' && params.scope ? parseScope(params.scope) : [];
  const hash = sha256(token);
  const refresh = nextRefresh(ctx, client);
  const redeemed = await redeemRefreshToken(ctx, client, hash, asked, refresh?.stored ?? null);
  if (!redeemed && guess) return null;
  if (!redeemed) {
    await endReplayedGrant(ctx, client, 'refresh_token', hash);
    throw new InvalidGrant('Refresh token is invalid, expired or revoked');
  }
  if (!redeemed.scope_ok) throw new InvalidScope();
  assertStillValid(redeemed);
  const scope = parseScope(redeemed.scope);
  return signTokens(ctx, subjectOf(client, redeemed, scope), {
    refreshToken: refresh?.value,
    idToken: scope.includes('openid') ? { nonce: null, claims: claimsFor(redeemed, scope) } : null,
  });
}

/** The grant still stands, the user has not signed out everywhere and is still a member (else the statement ended the grant). */
function assertStillValid(redeemed: Redeemed): void {
  if (!redeemed.grant_live) throw new InvalidGrant('The grant has been revoked');
  if (!redeemed.session_current) throw new InvalidGrant('The user has signed out everywhere since this was issued');
  if (!redeemed.member) throw new InvalidGrant('The user is no longer a member of the organization');
}

function subjectOf(client: Client, r: Redeemed, scope: string[]): TokenSubject {
  return { client, grantId: r.grant_id, userId: r.user_id, organizationId: r.organization_id, scope, authTime: r.auth_time, sessionVersion: r.session_version };
}

async function clientCredentials(ctx: Context, client: Client, params: Params): Promise<TokenResponse> {
  const asked = typeof params.scope === 'string' ? parseScope(params.scope) : [];
  const userScopes = new Set(['openid', 'offline_access', 'profile', 'email']);
  // Without a scope parameter, what the client may have minus `api`: that one is never granted by default (docs/architecture.md#oauth-and-openid-connect).
  const candidates = asked.length ? asked : client.allowedScopes.filter((s) => !userScopes.has(s) && s !== 'api');
  if (asked.some((s) => userScopes.has(s) || !client.allowedScopes.includes(s))) throw new InvalidScope();
  // A machine holds no license: the statement leaves out the scopes that name a product, or refuses them when asked.
  const granted = await recordClientCredentialsGrant(ctx, client, candidates, asked.length > 0);
  if (!granted) throw new InvalidScope();
  const { grantId, scope } = granted;
  const subject: TokenSubject = { client, grantId, userId: null, organizationId: client.organizationId, scope, authTime: null, sessionVersion: 0 };
  return signTokens(ctx, subject, {});
}
