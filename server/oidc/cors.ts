// CORS for the endpoints a browser application calls directly (token, userinfo, revocation, introspection,
// keys, discovery): allowed when an enabled client lists the origin. No cookies are involved.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { originAllowed } from '../../schema/modules/oauth/discovery.service.ts';
import type { RequestState } from '../middleware/request.ts';

export function oauthCors(base: ContextBase): Koa.Middleware {
  return async (ctx, next) => {
    const origin = ctx.get('Origin');
    ctx.vary('Origin');
    const allowed = origin
      ? await originAllowed(makeContext(base, null, ctx.state.request as RequestState), origin)
      : false;
    if (allowed) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Expose-Headers', 'WWW-Authenticate');
    }
    if (ctx.method === 'OPTIONS') {
      if (allowed) {
        ctx.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
        ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type');
        ctx.set('Access-Control-Max-Age', '600');
      }
      ctx.status = 204;
      return;
    }
    await next();
  };
}
