// Builds the request's Context: resolves the caller once (session token, API key + secret, or the portal's
// cookie) through the schema's actor service. A write carried only by the cookie must come from our own
// origin (CSRF defence); a bearer token is never sent by a browser on its own, so it needs no such check.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { resolveActor } from '../../schema/actor.ts';
import { ForbiddenError, UnauthenticatedError } from '../../schema/errors/index.ts';
import type { RequestState } from './request.ts';

export const SESSION_COOKIE = 'tessera_session';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The one reading of `Authorization: Bearer <token>` (RFC 6750 2.1; the scheme is case-insensitive): the token,
 * null without a header, and `malformed()` thrown for any other header.
 */
export function bearerToken(
  header: string,
  malformed: () => Error = () => new UnauthenticatedError('The Authorization header must be "Bearer <token>"'),
): string | null {
  if (!header) return null;
  const token = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header)?.[1];
  if (token === undefined) throw malformed();
  return token;
}

function sameOrigin(ctx: Koa.Context, origin: string): boolean {
  const source = ctx.get('Origin') || ctx.get('Referer');
  if (!source) return false;
  try {
    return new URL(source).origin === origin;
  } catch {
    return false;
  }
}

export function actorMiddleware(base: ContextBase): Koa.Middleware {
  return async (ctx, next) => {
    const request = ctx.state.request as RequestState;
    const anonymous = makeContext(base, null, request);
    const bearer = bearerToken(ctx.get('Authorization'));
    const cookie = bearer === null ? (ctx.cookies.get(SESSION_COOKIE) ?? null) : null;
    if (cookie && !SAFE_METHODS.has(ctx.method) && !sameOrigin(ctx, new URL(base.settings.issuer()).origin)) {
      throw new ForbiddenError(
        'Cross-site request refused: send the session as a Bearer token, or call from the portal',
      );
    }
    const actor = await resolveActor(anonymous, {
      bearer,
      apiSecret: ctx.get('X-API-Secret') || null,
      sessionCookie: cookie,
    });
    ctx.state.tessera = makeContext(base, actor, request);
    await next();
  };
}
