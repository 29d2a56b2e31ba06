// Turns whatever a route throws into the one error body. DomainErrors carry their code; body-parser and
// HTTP errors keep their status; anything else is a 500 whose detail is logged, never sent.
import type Koa from 'koa';
import type { Logger } from 'pino';
import { InsufficientScopeError, RateLimitedError, UserError } from '../../schema/errors/index.ts';
import { ServiceUnavailableError } from '../../schema/errors/unavailable.ts';
import { classifyError } from '../errors/classify.ts';
import { sendError, sendUnavailable } from '../errors/http.ts';
import type { RequestState } from './request.ts';

/** The methods of the routes @koa/router matched by path (its `ctx.matched` layers). */
function allowedMethods(ctx: Koa.Context): string {
  const matched = (ctx as { matched?: { methods: string[] }[] }).matched ?? [];
  return [...new Set(matched.flatMap((layer) => layer.methods))].join(', ');
}

export function errorMiddleware(logger: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const requestId = (ctx.state.request as RequestState | undefined)?.requestId;
      const what = classifyError(error);
      switch (what.kind) {
        case 'domain': {
          const domain = what.error;
          // RFC 9110 15.5.6: a 405 lists what the path does allow (the router's allowedMethods throws without it).
          if (domain.code === 'method_not_allowed' && !ctx.response.get('Allow')) ctx.set('Allow', allowedMethods(ctx));
          sendError(ctx, domain.code, domain.message, {
            details: domain instanceof UserError ? domain.details : undefined,
            retryAfter:
              domain instanceof RateLimitedError || domain instanceof ServiceUnavailableError
                ? domain.retryAfterSeconds
                : undefined,
            scope: domain instanceof InsufficientScopeError ? domain.scope : undefined,
            // As GraphQL's extensions carry it: an access token refused what is first-party only (FirstPartyOnlyError).
            reason: typeof domain.extensions.reason === 'string' ? domain.extensions.reason : undefined,
          });
          return;
        }
        case 'request':
          sendError(ctx, what.code, what.message);
          return;
        // The database down or saturated: the client should come back shortly; the service recovers on its own.
        case 'unavailable':
          logger.warn({ err: error, requestId }, 'database unavailable');
          sendUnavailable(ctx);
          return;
        case 'internal':
          logger.error({ err: error, requestId }, 'unhandled error');
          sendError(ctx, 'internal_error', 'Something went wrong on our side');
      }
    }
  };
}
