// POST /oauth/device_authorization (RFC 8628 3.1): the client authenticates as at the token endpoint
// (client_secret_post, or client_id alone for a public client), so an Authorization header is refused the same way.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { startDeviceAuthorization } from '../../schema/modules/oauth/device.service.ts';
import { InvalidClient } from '../../schema/modules/oauth/oauth.errors.ts';
import type { RequestState } from '../middleware/request.ts';
import { requestParams, sendJson, singleValuedButResource } from './index.ts';

export function deviceAuthorizationEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    if (ctx.get('Authorization')) {
      throw new InvalidClient(
        'Client authentication must use client_secret_post: send client_id (and a confidential client its client_secret) in the body',
      );
    }
    const params = singleValuedButResource(requestParams(ctx));
    const context = makeContext(base, null, ctx.state.request as RequestState);
    sendJson(ctx, await startDeviceAuthorization(context, params));
  };
}
