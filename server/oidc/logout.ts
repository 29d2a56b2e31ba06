// GET and POST /oauth/logout (RP-Initiated Logout 1.0). Steps: read the parameters and the session cookie, let
// the logout service decide, then clear the cookie and redirect, or send the browser to the portal's
// confirmation page (/logout) when the user must be asked first.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { resolveActor } from '../../schema/actor.ts';
import { logout } from '../../schema/modules/oauth/logout.service.ts';
import { OAuthError } from '../../schema/modules/oauth/oauth.errors.ts';
import { SESSION_COOKIE } from '../middleware/actor.ts';
import type { RequestState } from '../middleware/request.ts';
import { sessionCookieAttributes } from '../portal-contract.ts';
import { errorPage, noStore, requestParams, singleValued } from './index.ts';

export function logoutEndpoint(base: ContextBase, cookie: { secure: boolean }): Koa.Middleware {
  return async (ctx) => {
    const context = makeContext(base, null, ctx.state.request as RequestState);
    try {
      const params = singleValued(requestParams(ctx));
      const sessionCookie = ctx.cookies.get(SESSION_COOKIE);
      const actor = sessionCookie ? await resolveActor(context, { sessionCookie }) : null;
      const outcome = await logout(
        context,
        params,
        actor?.kind === 'user' ? { id: actor.sessionId, userId: actor.userId } : null,
      );
      noStore(ctx);
      if (outcome.kind === 'confirm') {
        ctx.status = 303;
        return ctx.redirect(`/logout?${new URLSearchParams({ request: outcome.request })}`);
      }
      ctx.cookies.set(SESSION_COOKIE, null, sessionCookieAttributes(cookie));
      if (outcome.redirect) {
        ctx.status = ctx.method === 'POST' ? 303 : 302;
        return ctx.redirect(outcome.redirect);
      }
      ctx.status = 303;
      ctx.redirect('/login?signed_out=1');
    } catch (error) {
      if (error instanceof OAuthError) return errorPage(ctx, error);
      throw error;
    }
  };
}
