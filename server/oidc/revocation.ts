// POST /oauth/revoke (RFC 7009). Steps: refuse client credentials in a header, read the parameters, revoke.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { revoke } from '../../schema/modules/oauth/revocation.service.ts';
import type { RequestState } from '../middleware/request.ts';
import { refuseHeaderAuth, requestParams, sendJson, singleValued } from './index.ts';

export function revokeEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    refuseHeaderAuth(ctx);
    await revoke(makeContext(base, null, ctx.state.request as RequestState), singleValued(requestParams(ctx)));
    sendJson(ctx, {});
  };
}
