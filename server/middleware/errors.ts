// Turns whatever a route throws into the one error body. DomainErrors carry their code; body-parser and
// HTTP errors keep their status; anything else is a 500 whose detail is logged, never sent.
import type Koa from 'koa';
import type { Logger } from 'pino';
import { DomainError, InsufficientScopeError, RateLimitedError, UserError } from '../../schema/errors/index.ts';
import { ServiceUnavailableError, isDatabaseUnavailable } from '../../schema/errors/unavailable.ts';
import { sendError, sendUnavailable } from '../errors/http.ts';

const HTTP_CODES: Record<number, string> = { 400: 'invalid_request', 413: 'payload_too_large', 415: 'unsupported_media_type', 405: 'method_not_allowed', 404: 'not_found' };

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
      if (error instanceof DomainError) {
        // RFC 9110 15.5.6: a 405 lists what the path does allow (the router's allowedMethods throws without it).
        if (error.code === 'method_not_allowed' && !ctx.response.get('Allow')) ctx.set('Allow', allowedMethods(ctx));
        sendError(ctx, error.code, error.message, {
          details: error instanceof UserError ? error.details : undefined,
          retryAfter: error instanceof RateLimitedError || error instanceof ServiceUnavailableError ? error.retryAfterSeconds : undefined,
          scope: error instanceof InsufficientScopeError ? error.scope : undefined,
        });
        return;
      }
      const status = (error as { status?: number; expose?: boolean }).status;
      if (status && status < 500 && HTTP_CODES[status]) {
        const message = status === 400 ? 'The request body is not valid JSON' : status === 413 ? 'The request body is too large' : (error as Error).message;
        sendError(ctx, HTTP_CODES[status]!, message);
        return;
      }
      // A body whose Content-Encoding does not decode (gzip that is not gzip): zlib's errors carry no status.
      // Brotli's decoder errors are coded ERR__ERROR_FORMAT_... or ERR_BROTLI_....
      if (/^(Z_|ERR__ERROR_|ERR_BROTLI_)/.test((error as { code?: string }).code ?? '')) {
        sendError(ctx, 'invalid_request', 'The request body could not be decoded (Content-Encoding)');
        return;
      }
      // The database down or saturated: the client should come back shortly; the service recovers on its own.
      if (isDatabaseUnavailable(error)) {
        logger.warn({ err: error, requestId: ctx.state.request?.requestId }, 'database unavailable');
        sendUnavailable(ctx);
        return;
      }
      logger.error({ err: error, requestId: ctx.state.request?.requestId }, 'unhandled error');
      sendError(ctx, 'internal_error', 'Something went wrong on our side');
    }
  };
}
