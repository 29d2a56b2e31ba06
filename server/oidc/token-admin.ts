// POST /oauth/revoke (RFC 7009), POST /oauth/introspect (RFC 7662), GET and POST /oauth/logout.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { introspect, logout, revoke } from '../../schema/modules/oauth/token-admin.service.ts';
import { resolveActor } from '../../schema/modules/auth/actor.service.ts';
import { InvalidClient, OAuthError } from '../../schema/modules/oauth/oauth.errors.ts';
import { SESSION_COOKIE } from '../middleware/actor.ts';
import type { RequestState } from '../middleware/request.ts';
import { errorPage, noStore, requestParams, sendJson, singleValued } from './index.ts';

const refuseHeaderAuth = (ctx: Koa.Context) => {
  if (ctx.get('Authorization')) throw new InvalidClient('Client authentication must use client_secret_post');
};

export function revokeEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    refuseHeaderAuth(ctx);
    await revoke(makeContext(base, null, ctx.state.request as RequestState), singleValued(requestParams(ctx)));
    sendJson(ctx, {});
  };
}

export function introspectEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    refuseHeaderAuth(ctx);
    sendJson(ctx, await introspect(makeContext(base, null, ctx.state.request as RequestState), singleValued(requestParams(ctx))));
  };
}

export function logoutEndpoint(base: ContextBase, cookie: { secure: boolean }): Koa.Middleware {
  return async (ctx) => {
    const context = makeContext(base, null, ctx.state.request as RequestState);
    try {
      const params = singleValued(requestParams(ctx));
      const sessionCookie = ctx.cookies.get(SESSION_COOKIE);
      const actor = sessionCookie ? await resolveActor(context, { sessionCookie }) : null;
      const result = await logout(context, params, actor?.kind === 'user' ? actor.sessionId : null);
      ctx.cookies.set(SESSION_COOKIE, null, { httpOnly: true, sameSite: 'lax', secure: cookie.secure, path: '/' });
      noStore(ctx);
      if (result.redirect) {
        ctx.status = ctx.method === 'POST' ? 303 : 302;
        return ctx.redirect(result.redirect);
      }
      ctx.status = 303;
      ctx.redirect('/login?signed_out=1');
    } catch (error) {
      if (error instanceof OAuthError) return errorPage(ctx, error);
      throw error;
    }
  };
}
