// GET and POST /oauth/authorize. Steps: read the parameters and the session cookie, let the schema's
// authorization service decide (it reads the session with the client), then send the browser where it says
// (client, sign-in, or consent).
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { authorize, type AuthorizeOutcome } from '../../schema/modules/oauth/authorize.service.ts';
import { AuthorizePageError, OAuthError } from '../../schema/modules/oauth/oauth.errors.ts';
import { SESSION_COOKIE } from '../middleware/actor.ts';
import type { RequestState } from '../middleware/request.ts';
import { errorPage, noStore, requestParams, type Params } from './index.ts';

function location(outcome: AuthorizeOutcome): string {
  if (outcome.kind === 'redirect') return outcome.url;
  if (outcome.kind === 'consent') return `/consent?${new URLSearchParams({ request: outcome.request })}`;
  const back = `/oauth/authorize?${new URLSearchParams(outcome.params)}`;
  // A person the client's organization requires a second factor of sets one up first, then comes back.
  if (outcome.again === 'enrol') return `/portal/security?${new URLSearchParams({ enrol: '1', return_to: back })}`;
  const query = new URLSearchParams({ return_to: back });
  if (outcome.loginHint) query.set('login_hint', outcome.loginHint);
  // The hinted address's organization signs in through its own identity provider: straight there.
  if (outcome.sso) return `/sso/${encodeURIComponent(outcome.sso)}/start?${query}`;
  // The portal's sign-in page then asks a signed-in person to sign in anew rather than sending them back.
  if (outcome.again) query.set('reauth', '1');
  return `/login?${query}`;
}

export function authorizeEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    const context = makeContext(base, null, ctx.state.request as RequestState);
    let params: Params;
    try {
      params = requestParams(ctx);
    } catch (error) {
      if (error instanceof OAuthError) return errorPage(ctx, error);
      throw error;
    }
    try {
      const outcome = await authorize(context, params, ctx.cookies.get(SESSION_COOKIE) ?? null);
      noStore(ctx);
      ctx.status = ctx.method === 'POST' ? 303 : 302;
      ctx.redirect(location(outcome));
    } catch (error) {
      if (error instanceof AuthorizePageError) return errorPage(ctx, error);
      throw error;
    }
  };
}
