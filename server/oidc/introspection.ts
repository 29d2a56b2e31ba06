// POST /oauth/introspect (RFC 7662). Steps: refuse client credentials in a header, read the parameters, describe
// the token.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { introspect } from '../../schema/modules/oauth/introspection.service.ts';
import type { RequestState } from '../middleware/request.ts';
import { refuseHeaderAuth, requestParams, sendJson, singleValued } from './index.ts';

export function introspectEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    refuseHeaderAuth(ctx);
    sendJson(
      ctx,
      await introspect(makeContext(base, null, ctx.state.request as RequestState), singleValued(requestParams(ctx))),
    );
  };
}
