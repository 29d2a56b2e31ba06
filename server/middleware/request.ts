// Request id, client address, and one JSON log line per request.
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { routeLabel } from '../metrics.ts';
import type { Tracing } from '../tracing.ts';
import { DEVICE_COOKIE } from '../portal-contract.ts';

export interface RequestState {
  requestId: string;
  ip: string | null;
  userAgent: string | null;
  /** The device cookie as sent, for the sign-in throttle to check (schema/modules/auth/device-cookie.ts). */
  deviceCookie: string | null;
}

const SAFE_ID = /^[A-Za-z0-9._:-]{1,100}$/;

export function requestMiddleware(logger: Logger, traced?: Tracing): Koa.Middleware {
  return async (ctx, next) => {
    const given = ctx.get('X-Request-Id');
    const requestId = SAFE_ID.test(given) ? given : randomUUID();
    ctx.set('X-Request-Id', requestId);
    ctx.state.request = {
      requestId,
      ip: ctx.ip || null,
      userAgent: ctx.get('User-Agent') || null,
      deviceCookie: ctx.cookies.get(DEVICE_COOKIE) ?? null,
    } satisfies RequestState;
    const started = performance.now();
    try {
      await next();
    } finally {
      // The span is named after the route's template, as the metrics label it; what no router matched keeps the method alone.
      if (traced) {
        const route = routeLabel(ctx);
        if (!route.startsWith('(')) traced.nameRequest(route);
      }
      const ms = Math.round((performance.now() - started) * 10) / 10;
      const level = ctx.status >= 500 ? 'error' : 'info';
      logger[level]({ requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms }, 'request');
    }
  };
}
