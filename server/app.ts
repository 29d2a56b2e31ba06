// Builds the Koa app: middleware order, the routers, and the portal last. One process, one port.
import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Logger } from 'pino';
import type { Context, ContextBase } from '../schema/context.ts';
import { DomainError } from '../schema/errors/index.ts';
import { schema } from '../schema/index.ts';
import { readiness } from '../schema/health/readiness.ts';
import { createExecutor } from './graphql/executor.ts';
import { createGraphqlServer, GRAPHQL_BODY_LIMIT } from './graphql/yoga.ts';
import { requestMiddleware } from './middleware/request.ts';
import { errorMiddleware } from './middleware/errors.ts';
import { securityHeaders } from './middleware/security-headers.ts';
import { actorMiddleware, SESSION_COOKIE } from './middleware/actor.ts';
import { rateLimitMiddleware, type RateLimitOptions } from './middleware/rate-limit.ts';
import { portalBridge, type PortalHandler } from './portal.ts';
import { mountRoutes } from './rest/route.ts';
import { apiV1Routes } from './rest/api-v1.ts';
import { v1Routes } from './rest/v1.ts';
import { oauthClientRoutes } from './rest/oauth-clients.ts';
import { licenseCheckWithAccessToken } from './rest/licenses.ts';
import { sendError } from './errors/http.ts';
import { oidcRouter } from './oidc/router.ts';
import { ssoRouter } from './sso/router.ts';
import { scimEndpoint } from './scim/router.ts';
import { metricsEndpoint, requestMetrics } from './metrics.ts';
import type { Tracing } from './tracing.ts';

export interface AppOptions {
  base: ContextBase;
  logger: Logger;
  /** The SvelteKit handler (adapter-node), when the portal is built. */
  portal?: PortalHandler;
  /** Behind a proxy that sets X-Forwarded-For. */
  trustProxy?: boolean;
  /** Request limits; the interface's values when not given. */
  rateLimits?: RateLimitOptions;
  /** METRICS_TOKEN: /metrics answers on this port to a bearer of it; absent, it is not served here. */
  metricsToken?: string;
  tracing?: Tracing;
}

const BODY_LIMIT = '100kb';

export function createApp({
  base,
  logger,
  portal,
  trustProxy = false,
  rateLimits = {},
  metricsToken,
  tracing,
}: AppOptions): Koa {
  const app = new Koa({ proxy: trustProxy });
  app.silent = true;
  const executor = createExecutor(schema, tracing);
  const cookie = { name: SESSION_COOKIE, secure: base.settings.issuer().startsWith('https:') };
  const yoga = createGraphqlServer(schema, { production: base.settings.production, logger, tracing });

  app.use(requestMetrics(base.metrics));
  app.use(requestMiddleware(logger, tracing));
  app.use(securityHeaders());
  app.use(errorMiddleware(logger));
  // The licence check asked with an access token answers here, ahead of the routers (server/rest/licenses.ts).
  app.use(licenseCheckWithAccessToken(base, rateLimits));
  app.use(metricsEndpoint(base.metrics, metricsToken));

  const ops = new Router();
  ops.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  ops.get('/readyz', async (ctx) => {
    const state = await readiness(base.db);
    ctx.status = state.ready ? 200 : 503;
    ctx.body = state.ready ? { status: 'ready' } : { status: 'not_ready', reason: state.reason };
  });
  // Half a megabyte of JSON, parsed when first asked for.
  ops.get('/openapi.json', async (ctx) => {
    ctx.body = (await import('../openapi.json', { with: { type: 'json' } })).default;
  });
  app.use(ops.routes());
  app.use(oidcRouter(base, cookie).routes());
  app.use(scimEndpoint(base, { logger, rateLimits }));

  const limits = rateLimitMiddleware(rateLimits);
  app.use(ssoRouter(base, cookie, limits).routes());
  const methods = {
    throw: true,
    methodNotAllowed: () => new DomainError('method_not_allowed', 'This endpoint does not support that method'),
    notImplemented: () => new DomainError('method_not_allowed', 'This endpoint does not support that method'),
  };
  for (const [prefix, routes] of [
    ['/api/v1', [...apiV1Routes, ...oauthClientRoutes]],
    ['/v1', v1Routes],
  ] as const) {
    const router = new Router({ prefix });
    // DELETE too: revoking an API key may name it in the body (docs/architecture.md#rest-conventions); routes that take none ignore it.
    router.use(
      bodyParser({
        enableTypes: ['json'],
        jsonLimit: BODY_LIMIT,
        encoding: 'utf-8',
        parsedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'],
      }),
    );
    router.use(actorMiddleware(base));
    router.use(limits);
    mountRoutes(router, routes, executor.run, cookie);
    app.use(router.routes());
    app.use(router.allowedMethods(methods));
  }

  // Unknown paths under the API prefixes answer in the API's error shape, not with a portal page.
  app.use(async (ctx, next) => {
    if (/^\/(v1|api\/v1)(\/|$)/.test(ctx.path) && ctx.status === 404 && ctx.body === undefined) {
      return sendError(ctx, 'not_found', `No endpoint ${ctx.method} ${ctx.path}`);
    }
    await next();
  });

  const graphql = new Router();
  graphql.all('/graphql', actorMiddleware(base), limits, async (ctx) => {
    // The body limit itself is yoga's (maxRequestBodySize), counted on the bytes read; this only answers early.
    const length = Number(ctx.get('Content-Length') || 0);
    if (length > GRAPHQL_BODY_LIMIT) return sendError(ctx, 'payload_too_large', 'The request body is too large');
    const response = await yoga.handleNodeRequestAndResponse(ctx.req, ctx.res, {
      tessera: ctx.state.tessera as Context,
    });
    ctx.status = response.status;
    response.headers.forEach((value, key) => ctx.set(key, value));
    // Answers carry tenants' data (and a GET's query sits in the URL): no cache keeps them.
    ctx.set('Cache-Control', 'no-store');
    ctx.body = response.body ? Buffer.from(await response.arrayBuffer()) : null;
  });
  app.use(graphql.routes());

  if (portal) app.use(portalBridge(base, executor, cookie, portal));
  return app;
}
