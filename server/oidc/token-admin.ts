// POST /oauth/revoke (RFC 7009) and POST /oauth/introspect (RFC 7662). /oauth/logout is logout.ts.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { introspect, revoke } from '../../schema/modules/oauth/token-admin.service.ts';
import { InvalidClient } from '../../schema/modules/oauth/oauth.errors.ts';
import type { RequestState } from '../middleware/request.ts';
import { requestParams, sendJson, singleValued } from './index.ts';

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
