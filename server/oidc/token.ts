// POST /oauth/token: client_secret_post only, so credentials in an Authorization header are refused.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { exchange } from '../../schema/modules/oauth/token.service.ts';
import { InvalidClient } from '../../schema/modules/oauth/oauth.errors.ts';
import type { RequestState } from '../middleware/request.ts';
import { requestParams, sendJson, singleValuedButResource } from './index.ts';

export function tokenEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    if (ctx.get('Authorization')) {
      throw new InvalidClient(
        'Client authentication must use client_secret_post: send client_id and client_secret in the body, not in an Authorization header',
      );
    }
    const params = singleValuedButResource(requestParams(ctx));
    const context = makeContext(base, null, ctx.state.request as RequestState);
    sendJson(ctx, await exchange(context, params));
  };
}
