// Applies the caller's rate limits and reports them: RateLimit-Policy and RateLimit (IETF draft), the legacy
// RateLimit-Limit/-Remaining/-Reset for the tightest limit, and 429 with Retry-After once one is exceeded.
import type Koa from 'koa';
import type { Context } from '../../schema/context.ts';
import { RateLimitedError } from '../../schema/errors/index.ts';
import {
  consume,
  describeLimit,
  limitsFor,
  type RateLimitSettings,
  type RateLimitState,
} from '../../schema/limits/rate-limits.ts';

export type RateLimitOptions = Partial<RateLimitSettings>;

/** Sets the headers for where the caller's limits stand; throws 429 when one is exceeded. */
export function reportLimits(ctx: Koa.Context, states: RateLimitState[]): void {
  if (!states.length) return;
  const tightest = states.reduce((a, b) => (b.remaining < a.remaining ? b : a));
  ctx.set('RateLimit-Policy', states.map((s) => `${s.limit};w=${s.windowSeconds}`).join(', '));
  ctx.set('RateLimit', `limit=${tightest.limit}, remaining=${tightest.remaining}, reset=${tightest.resetSeconds}`);
  ctx.set('RateLimit-Limit', String(tightest.limit));
  ctx.set('RateLimit-Remaining', String(tightest.remaining));
  ctx.set('RateLimit-Reset', String(tightest.resetSeconds));
  const over = states.find((s) => s.exceeded);
  if (over) throw new RateLimitedError(over.resetSeconds, describeLimit(over));
}

export function rateLimitMiddleware(options: RateLimitOptions = {}): Koa.Middleware {
  return async (ctx, next) => {
    const context = ctx.state.tessera as Context;
    reportLimits(ctx, await consume(context, limitsFor(context, options)));
    await next();
  };
}
