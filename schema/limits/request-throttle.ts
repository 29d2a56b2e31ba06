// Requests that send mail to someone (a password reset, a verification link) are counted per key in a fixed
// window, in the table the sign-in throttle uses, and refused with 429 past their limit: mail cannot be used to
// flood an inbox. One statement counts every key of the request, whatever the answer.
import type { Context } from '../context.ts';
import { RateLimitedError } from '../errors/index.ts';

export interface RequestCounter {
  key: string;
  limit: number;
}

export async function countRequest(ctx: Context, counters: RequestCounter[], windowSeconds: number): Promise<void> {
  const now = ctx.clock.now();
  const keys = counters.map((c) => c.key);
  const rows = await ctx.db.$queryRaw<{ key: string; failures: number; window_start: Date }[]>`
    insert into login_throttles as t (key, failures, window_start)
    select k, 1, ${now}::timestamp from unnest(${keys}::text[]) as k
    on conflict (key) do update set
      failures = case when t.window_start + make_interval(secs => ${windowSeconds}) <= ${now}::timestamp then 1 else t.failures + 1 end,
      window_start = case when t.window_start + make_interval(secs => ${windowSeconds}) <= ${now}::timestamp then ${now}::timestamp else t.window_start end
    returning key, failures, window_start`;
  const over = rows.find((r) => r.failures > (counters.find((c) => c.key === r.key)?.limit ?? Infinity));
  if (over) {
    const ends = over.window_start.getTime() + windowSeconds * 1000;
    throw new RateLimitedError(
      Math.max(1, Math.ceil((ends - now.getTime()) / 1000)),
      'Too many requests for this address; try again later',
    );
  }
}
