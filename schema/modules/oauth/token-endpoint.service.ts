// The token endpoint's grants (RFC 6749 4.1.3, 6, 4.4). Client authentication is client_secret_post only.
// A code is consumed with one conditional UPDATE; a replayed code or refresh token revokes its whole grant
// (OAuth 2.0 Security BCP 4.14, 4.13).
import type { Context } from '../../context.ts';
import { sha256 } from '../../lib/crypto.ts';
import { emitEvent } from '../../events/catalog.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { authenticateClient } from './clients.service.ts';
import { pkceMatches } from './authorize.service.ts';
import { InvalidGrant, InvalidRequest, InvalidScope, UnauthorizedClient, UnsupportedGrantType } from './oauth.errors.ts';
import { parseScope } from './scopes.ts';
import { issueTokens, revokeGrant, type TokenResponse, type TokenSubject } from './tokens.service.ts';

type Params = Record<string, unknown>;
type Client = Awaited<ReturnType<typeof authenticateClient>>;

const text = (value: unknown, name: string): string => {
  if (typeof value !== 'string' || value.length === 0) throw new InvalidRequest(`${name} is required`);
  if (value.length > 4096) throw new InvalidRequest(`${name} is too long`);
  return value;
};

export async function exchange(ctx: Context, params: Params): Promise<TokenResponse> {
  const grantType = text(params.grant_type, 'grant_type');
  const client = await authenticateClient(ctx, params.client_id, params.client_secret);
  if (!['authorization_code', 'refresh_token', 'client_credentials'].includes(grantType)) throw new UnsupportedGrantType();
  if (!client.grantTypes.includes(grantType)) throw new UnauthorizedClient();
  const response =
    grantType === 'authorization_code' ? await authorizationCode(ctx, client, params)
    : grantType === 'refresh_token' ? await refreshToken(ctx, client, params)
    : await clientCredentials(ctx, client, params);
  return response;
}

interface ConsumedCode {
  id: string;
  grant_id: string;
  client_id: string;
  user_id: string;
  organization_id: string;
  redirect_uri: string;
  scope: string;
  nonce: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  auth_time: Date;
  session_version: number;
}

async function authorizationCode(ctx: Context, client: Client, params: Params): Promise<TokenResponse> {
  const code = text(params.code, 'code');
  const redirectUri = text(params.redirect_uri, 'redirect_uri');
  const now = ctx.clock.now();
  const hash = sha256(code);
  const [consumed] = await ctx.db.$queryRaw<ConsumedCode[]>`
    update authorization_codes set used_at = ${now}
    where code_hash = ${hash} and client_id = ${client.id} and used_at is null and expires_at > ${now}
    returning id, grant_id, client_id, user_id, organization_id, redirect_uri, scope, nonce, code_challenge,
              code_challenge_method, auth_time, session_version`;
  if (!consumed) {
    const seen = await ctx.db.authorizationCode.findUnique({ where: { codeHash: hash }, select: { usedAt: true, grantId: true, clientId: true } });
    if (seen?.usedAt && seen.clientId === client.id) {
      await revokeGrant(ctx, ctx.db, seen.grantId);
      await recordAudit(ctx, { action: 'oauth.code.replay', outcome: 'failure', organizationId: client.organizationId, targetType: 'oauth_client', targetId: client.id });
    }
    // Another client's code is refused without being spent: its rightful client can still use it.
    if (seen && seen.clientId !== client.id) throw new InvalidGrant('Authorization code was issued to another client');
    throw new InvalidGrant(seen ? 'Authorization code has expired' : 'Authorization code is invalid');
  }
  if (consumed.redirect_uri !== redirectUri) throw new InvalidGrant('redirect_uri does not match the authorization request');
  const verifier = params.code_verifier;
  if (consumed.code_challenge) {
    if (typeof verifier !== 'string' || !pkceMatches(consumed.code_challenge_method, consumed.code_challenge, verifier)) {
      throw new InvalidGrant('PKCE verification failed');
    }
  } else if (verifier !== undefined) {
    throw new InvalidGrant('code_verifier given, but the authorization request had no code_challenge');
  }
  const subject = await activeSubject(ctx, client, {
    grantId: consumed.grant_id,
    userId: consumed.user_id,
    organizationId: consumed.organization_id,
    scope: parseScope(consumed.scope),
    authTime: consumed.auth_time,
    sessionVersion: consumed.session_version,
  });
  return issue(ctx, subject, consumed.nonce);
}

interface ConsumedRefresh {
  grant_id: string;
  user_id: string;
  organization_id: string;
  scope: string;
  auth_time: Date;
  session_version: number;
}

async function refreshToken(ctx: Context, client: Client, params: Params): Promise<TokenResponse> {
  const token = text(params.refresh_token, 'refresh_token');
  const now = ctx.clock.now();
  const hash = sha256(token);
  const [consumed] = await ctx.db.$queryRaw<ConsumedRefresh[]>`
    update refresh_tokens set used_at = ${now}
    where token_hash = ${hash} and client_id = ${client.id} and used_at is null and revoked_at is null and expires_at > ${now}
    returning grant_id, user_id, organization_id, scope, auth_time, session_version`;
  if (!consumed) {
    const seen = await ctx.db.refreshToken.findUnique({ where: { tokenHash: hash }, select: { usedAt: true, grantId: true, clientId: true } });
    if (seen?.usedAt && seen.clientId === client.id) {
      await revokeGrant(ctx, ctx.db, seen.grantId);
      await recordAudit(ctx, { action: 'oauth.refresh_token.replay', outcome: 'failure', organizationId: client.organizationId, targetType: 'oauth_client', targetId: client.id });
    }
    throw new InvalidGrant('Refresh token is invalid, expired or revoked');
  }
  let scope = parseScope(consumed.scope);
  if (typeof params.scope === 'string' && params.scope) {
    const asked = parseScope(params.scope);
    if (asked.some((s) => !scope.includes(s))) throw new InvalidScope();
    scope = asked;
  }
  const subject = await activeSubject(ctx, client, {
    grantId: consumed.grant_id,
    userId: consumed.user_id,
    organizationId: consumed.organization_id,
    scope,
    authTime: consumed.auth_time,
    sessionVersion: consumed.session_version,
  });
  return issue(ctx, subject, null);
}

async function clientCredentials(ctx: Context, client: Client, params: Params): Promise<TokenResponse> {
  const asked = typeof params.scope === 'string' ? parseScope(params.scope) : [];
  const userScopes = new Set(['openid', 'offline_access', 'profile', 'email']);
  const scope = asked.length ? asked : client.allowedScopes.filter((s) => !userScopes.has(s));
  if (asked.some((s) => userScopes.has(s) || !client.allowedScopes.includes(s))) throw new InvalidScope();
  const grant = await ctx.db.oAuthGrant.create({ data: { clientId: client.id, userId: null, scope: scope.join(' ') } });
  const subject: TokenSubject = { client, grantId: grant.id, userId: null, organizationId: client.organizationId, scope, authTime: null, sessionVersion: 0 };
  return ctx.db.$transaction(async (tx) => {
    const response = await issueTokens(ctx, tx, subject, { refresh: false, idToken: false });
    await tokenIssued(ctx, tx, subject, 'client_credentials');
    return response;
  });
}

/** The grant still stands and the user's session version has not moved since it was given. */
async function activeSubject(ctx: Context, client: Client, s: Omit<TokenSubject, 'client'>): Promise<TokenSubject> {
  const grant = await ctx.db.oAuthGrant.findUnique({ where: { id: s.grantId }, select: { revokedAt: true, user: { select: { sessionVersion: true } } } });
  if (!grant || grant.revokedAt) throw new InvalidGrant('The grant has been revoked');
  if (grant.user?.sessionVersion !== s.sessionVersion) {
    await revokeGrant(ctx, ctx.db, s.grantId);
    throw new InvalidGrant('The user has signed out everywhere since this was issued');
  }
  return { ...s, client };
}

async function issue(ctx: Context, subject: TokenSubject, nonce: string | null): Promise<TokenResponse> {
  const openid = subject.scope.includes('openid');
  return ctx.db.$transaction(async (tx) => {
    const response = await issueTokens(ctx, tx, subject, { refresh: subject.client.grantTypes.includes('refresh_token'), idToken: openid, nonce });
    await tokenIssued(ctx, tx, subject, 'user');
    return response;
  });
}

async function tokenIssued(ctx: Context, tx: Parameters<typeof issueTokens>[1], s: TokenSubject, kind: string) {
  // The connected-apps page shows when the application last used its access.
  if (s.userId) await tx.oAuthConsent.updateMany({ where: { userId: s.userId, clientId: s.client.id }, data: { lastUsedAt: ctx.clock.now() } });
  const org = await tx.organization.findUnique({ where: { id: s.organizationId }, select: { id: true, name: true } });
  await emitEvent(tx, 'oauth.token.issued', org, { client: { id: s.client.id, clientId: s.client.clientId }, user: s.userId ? { id: s.userId } : null, scope: s.scope.join(' '), kind });
  await recordAudit(ctx, { action: 'oauth.token.issue', actorId: s.userId, organizationId: s.organizationId, targetType: 'oauth_client', targetId: s.client.id, details: { kind, scope: s.scope.join(' ') } }, tx);
}
