// The one actor resolution for every request (REST, GraphQL, portal): a session token, an API key with its
// secret, or an OAuth access token. Presented but invalid credentials are an error, never anonymous. Each kind
// of credential costs one statement (authentication is a hot path: docs/architecture.md#hot-paths). It stands above
// the domains whose credentials it reads, so no module imports it: the server calls it, once per request.
import type { Actor, Context } from './context.ts';
import { InvalidToken } from './modules/oauth/oauth.errors.ts';
import { verifyAccessToken } from './modules/oauth/verify-access-token.ts';
import { authenticateApiKey, API_KEY_PREFIX } from './modules/api-keys/api-keys.service.ts';
import { findLiveSession } from './modules/sessions/sessions.service.ts';
import { recordAudit } from './modules/audit/audit.service.ts';

export interface Credentials {
  /** The Bearer value of the Authorization header. */
  bearer?: string | null;
  /** X-API-Secret, with an API key. */
  apiSecret?: string | null;
  /** The portal's session cookie. */
  sessionCookie?: string | null;
}

export async function resolveActor(ctx: Context, credentials: Credentials): Promise<Actor | null> {
  const bearer = credentials.bearer ?? null;
  if (bearer !== null) {
    const actor = await fromBearer(ctx, bearer, credentials.apiSecret ?? null);
    if (!actor) throw new InvalidToken('Invalid or expired credentials');
    return actor;
  }
  if (credentials.sessionCookie) {
    const session = await findLiveSession(ctx, credentials.sessionCookie);
    // A stale cookie is simply no session: the browser is sent to sign in again.
    if (session)
      return { kind: 'user', userId: session.userId, sessionId: session.id, organizationId: session.organizationId };
  }
  return null;
}

async function fromBearer(ctx: Context, bearer: string, apiSecret: string | null): Promise<Actor | null> {
  if (bearer.startsWith(API_KEY_PREFIX)) {
    const key = apiSecret ? await authenticateApiKey(ctx, bearer, apiSecret) : null;
    if (!key) {
      await recordAudit(ctx, {
        action: 'auth.api_key',
        outcome: 'failure',
        actorId: null,
        details: { reason: apiSecret ? 'bad_key_or_secret' : 'missing_secret' },
      });
      return null;
    }
    return {
      kind: 'apiKey',
      apiKeyId: key.id,
      organizationId: key.organizationId,
      role: key.role,
      createdById: key.createdById,
    };
  }
  const session = await findLiveSession(ctx, bearer);
  if (session)
    return { kind: 'user', userId: session.userId, sessionId: session.id, organizationId: session.organizationId };
  const token = await verifyAccessToken(ctx, bearer).catch(() => null);
  if (token) {
    return {
      kind: 'oauth',
      userId: token.userId,
      clientId: token.clientId,
      organizationId: token.organizationId,
      scope: token.scope,
      grantId: token.grantId,
      ...(token.platformWide ? { platformWide: true, amr: token.amr } : {}),
    };
  }
  return null;
}
