// Dynamic client registration (RFC 7591) at POST /oauth/register, with an initial access token as the bearer, and
// the registration of each client so made (RFC 7592) at GET, PUT and DELETE /oauth/register/{client_id}, with its
// registration access token (schema/modules/clients/registration.service.ts). Metadata is JSON, both ways.
import type { RouterMiddleware } from '@koa/router';
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import {
  deleteRegisteredClient,
  readRegisteredClient,
  registerClient,
  replaceRegisteredClient,
} from '../../schema/modules/clients/registration.service.ts';
import { InvalidClientMetadata, InvalidToken } from '../../schema/modules/oauth/oauth.errors.ts';
import { requireStorable } from '../middleware/input-guard.ts';
import { bearerToken } from '../middleware/actor.ts';
import type { RequestState } from '../middleware/request.ts';
import { noStore, sendJson } from './index.ts';

const bearer = (ctx: Koa.Context) => bearerToken(ctx.get('Authorization'), () => new InvalidToken());
const context = (base: ContextBase, ctx: Koa.Context) => makeContext(base, null, ctx.state.request as RequestState);
/**
 * A JSON body as the body parser read it (a form arrives as text, which registration refuses by name), once nothing
 * in it is what PostgreSQL cannot store (a NUL, invalid UTF-8).
 */
function body(ctx: Koa.Context): unknown {
  const read = (ctx.request as Koa.Request & { body?: unknown }).body;
  requireStorable([[read, '']], (p) => new InvalidClientMetadata(`${p.path || 'The client metadata'} ${p.message}`));
  return read;
}

export function registrationEndpoint(base: ContextBase): Koa.Middleware {
  return async (ctx) => {
    sendJson(ctx, await registerClient(context(base, ctx), bearer(ctx), body(ctx)), 201);
  };
}

export function registeredClientEndpoint(base: ContextBase): RouterMiddleware {
  return async (ctx) => {
    const clientId = ctx.params.client_id ?? '';
    const c = context(base, ctx);
    if (ctx.method === 'GET') return sendJson(ctx, await readRegisteredClient(c, clientId, bearer(ctx)));
    if (ctx.method === 'PUT') return sendJson(ctx, await replaceRegisteredClient(c, clientId, bearer(ctx), body(ctx)));
    await deleteRegisteredClient(c, clientId, bearer(ctx));
    noStore(ctx);
    ctx.status = 204;
  };
}
