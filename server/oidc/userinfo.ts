// GET and POST /oauth/userinfo (OIDC Core 5.3): the bearer token in the Authorization header, or as
// access_token in a form body (RFC 6750 2.2). A token without the openid scope is refused (OIDC Core 5.3.3).
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { userinfo } from '../../schema/modules/oauth/userinfo.service.ts';
import { InvalidRequest, InvalidToken } from '../../schema/modules/oauth/oauth.errors.ts';
import { bearerToken } from '../middleware/actor.ts';
import type { RequestState } from '../middleware/request.ts';
import { formOrJsonBody, sendJson } from './index.ts';

function accessToken(ctx: Koa.Context): string {
  const header = ctx.get('Authorization');
  const body =
    ctx.method === 'POST' && ctx.is('application/x-www-form-urlencoded')
      ? (formOrJsonBody(ctx) as Record<string, unknown>)
      : undefined;
  const fromBody = body?.access_token;
  if (header && fromBody !== undefined) throw new InvalidRequest('Send the access token once');
  if (fromBody !== undefined) {
    if (typeof fromBody !== 'string') throw new InvalidRequest('access_token must be given once');
    return fromBody;
  }
  const token = bearerToken(header, () => new InvalidToken());
  if (token === null) throw new InvalidToken();
  return token;
}

export function userinfoEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    const token = accessToken(ctx);
    const context = makeContext(base, null, ctx.state.request as RequestState);
    sendJson(ctx, await userinfo(context, token));
  };
}
