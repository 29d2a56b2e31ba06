// Revocation (RFC 7009), introspection (RFC 7662), userinfo, and RP-initiated logout.
import type { Context } from '../../context.ts';
import { sha256 } from '../../lib/crypto.ts';
import { emitEvent } from '../../events/catalog.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { revokeSession } from '../auth/sessions.service.ts';
import { authenticateClient, findEnabledClient } from './clients.service.ts';
import { InvalidRequest } from './oauth.errors.ts';
import { userClaims } from './claims.service.ts';
import { REFRESH_TOKEN_PREFIX, revokeGrant, verifyAccessToken } from './tokens.service.ts';

type Params = Record<string, unknown>;

/** Which grant a token belongs to, if it is ours and was issued to this client. */
async function grantOf(ctx: Context, token: string, clientDbId: string): Promise<string | null> {
  if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
    const row = await ctx.db.refreshToken.findUnique({ where: { tokenHash: sha256(token) }, select: { grantId: true, clientId: true } });
    return row && row.clientId === clientDbId ? row.grantId : null;
  }
  const verified = await verifyAccessToken(ctx, token).catch(() => null);
  return verified && verified.clientDbId === clientDbId ? verified.grantId : null;
}

/** Always succeeds for an authenticated client (RFC 7009 2.2): an unknown token is simply already gone. */
export async function revoke(ctx: Context, params: Params): Promise<void> {
  const client = await authenticateClient(ctx, params.client_id, params.client_secret);
  if (typeof params.token !== 'string' || !params.token) throw new InvalidRequest('token is required');
  if (params.token.length > 8192) return;
  const grantId = await grantOf(ctx, params.token, client.id);
  if (!grantId) return;
  await ctx.db.$transaction(async (tx) => {
    await revokeGrant(ctx, tx, grantId);
    const org = await tx.organization.findUnique({ where: { id: client.organizationId }, select: { id: true, name: true } });
    await emitEvent(tx, 'oauth_client.token_revoked', org, { client: { id: client.id, clientId: client.clientId }, grantId });
    await recordAudit(ctx, { action: 'oauth.token.revoke', organizationId: client.organizationId, targetType: 'oauth_client', targetId: client.id }, tx);
  });
}

/** Only tokens of the introspecting client's own organization are described; others are inactive to it. */
export async function introspect(ctx: Context, params: Params): Promise<Record<string, unknown>> {
  const client = await authenticateClient(ctx, params.client_id, params.client_secret);
  if (typeof params.token !== 'string' || !params.token) throw new InvalidRequest('token is required');
  const token = params.token;
  if (token.length > 8192) return { active: false };
  if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
    const row = await ctx.db.refreshToken.findUnique({
      where: { tokenHash: sha256(token) },
      include: { grant: { select: { revokedAt: true } }, client: { select: { clientId: true, organizationId: true } } },
    });
    const now = ctx.clock.now();
    if (!row || row.usedAt || row.revokedAt || row.grant.revokedAt || row.expiresAt <= now || row.client.organizationId !== client.organizationId) return { active: false };
    return {
      active: true, token_type: 'refresh_token', scope: row.scope, client_id: row.client.clientId, sub: row.userId,
      exp: Math.floor(row.expiresAt.getTime() / 1000), iat: Math.floor(row.createdAt.getTime() / 1000), iss: ctx.settings.issuer(),
    };
  }
  const verified = await verifyAccessToken(ctx, token).catch(() => null);
  if (!verified) return { active: false };
  const owner = await ctx.db.oAuthClient.findUnique({ where: { id: verified.clientDbId }, select: { organizationId: true } });
  if (owner?.organizationId !== client.organizationId) return { active: false };
  return {
    active: true, token_type: 'Bearer', scope: verified.scope.join(' '), client_id: verified.clientId, sub: verified.sub,
    aud: verified.clientId, exp: verified.exp, iat: verified.iat, iss: ctx.settings.issuer(), org_id: verified.organizationId,
  };
}

export async function userinfo(ctx: Context, accessToken: string): Promise<Record<string, unknown>> {
  const verified = await verifyAccessToken(ctx, accessToken);
  if (!verified.userId) return { sub: verified.sub };
  return userClaims(ctx, verified.userId, verified.organizationId, verified.scope);
}

export interface LogoutResult {
  /** Where to send the browser: the registered post-logout URI with state, or null for our own page. */
  redirect: string | null;
}

/** RP-initiated logout 1.0: ends the browser session; redirects only to a registered post_logout_redirect_uri. */
export async function logout(ctx: Context, params: Params, sessionId: string | null): Promise<LogoutResult> {
  const hint = typeof params.id_token_hint === 'string' ? params.id_token_hint : null;
  let clientId = typeof params.client_id === 'string' ? params.client_id : null;
  let hintedUser: string | null = null;
  if (hint) {
    try {
      // An expired ID token is still a fine hint of who and which client.
      const { payload } = await ctx.keys.verify(hint, { issuer: ctx.settings.issuer(), currentDate: new Date(0) });
      const aud = Array.isArray(payload.aud) ? payload.aud[0] : payload.aud;
      if (clientId && aud !== clientId) throw new InvalidRequest('id_token_hint was issued to another client');
      clientId = aud ?? null;
      hintedUser = payload.sub ?? null;
    } catch (error) {
      if (error instanceof InvalidRequest) throw error;
      throw new InvalidRequest('id_token_hint is not a valid ID token from this issuer');
    }
  }
  const postLogout = typeof params.post_logout_redirect_uri === 'string' ? params.post_logout_redirect_uri : null;
  let redirect: string | null = null;
  if (postLogout) {
    if (!clientId) throw new InvalidRequest('post_logout_redirect_uri needs id_token_hint or client_id');
    const client = await findEnabledClient(ctx, clientId).catch(() => {
      throw new InvalidRequest('Client not found');
    });
    if (!client.postLogoutRedirectUris.includes(postLogout)) throw new InvalidRequest('post_logout_redirect_uri not registered');
    const url = new URL(postLogout);
    if (typeof params.state === 'string') url.searchParams.set('state', params.state);
    redirect = url.toString();
  }
  if (sessionId) {
    const session = await ctx.db.session.findUnique({ where: { id: sessionId }, select: { userId: true } });
    // A hint naming someone else does not sign out the current user.
    if (session && (!hintedUser || hintedUser === session.userId)) await revokeSession(ctx, sessionId);
  }
  return { redirect };
}
