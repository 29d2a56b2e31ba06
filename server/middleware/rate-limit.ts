// Applies the caller's rate limits and reports them: RateLimit-Policy and RateLimit (IETF draft), the legacy
// RateLimit-Limit/-Remaining/-Reset for the tightest limit, and 429 with Retry-After once one is exceeded.
import type Koa from 'koa';
import type { Context } from '../../schema/context.ts';
import { RateLimitedError } from '../../schema/errors/index.ts';
import { consume, describeLimit, limitsFor, type RateLimitSettings } from '../../schema/limits/rate-limits.ts';

export type RateLimitOptions = Partial<RateLimitSettings>;

export function rateLimitMiddleware(options: RateLimitOptions = {}): Koa.Middleware {
  return async (ctx, next) => {
    const context = ctx.state.tessera as Context;
    const states = await consume(context, limitsFor(context, options));
    if (states.length) {
      const tightest = states.reduce((a, b) => (b.remaining < a.remaining ? b : a));
      ctx.set('RateLimit-Policy', states.map((s) => `${s.limit};w=${s.windowSeconds}`).join(', '));
      ctx.set('RateLimit', `limit=${tightest.limit}, remaining=${tightest.remaining}, reset=${tightest.resetSeconds}`);
      ctx.set('RateLimit-Limit', String(tightest.limit));
      ctx.set('RateLimit-Remaining', String(tightest.remaining));
      ctx.set('RateLimit-Reset', String(tightest.resetSeconds));
      const over = states.find((s) => s.exceeded);
      if (over) {
        throw new RateLimitedError(over.resetSeconds, describeLimit(over));
      }
    }
    await next();
  };
}
