// Request rate limits (the interface's Limits table): 100 requests a minute per API key and 1000 an hour per
// organization. Fixed windows counted in PostgreSQL with one statement per limit, so every API process
// shares the counts.
import type { Context } from '../../context.ts';

export interface RateLimit {
  name: string;
  key: string;
  limit: number;
  windowSeconds: number;
}

export interface RateLimitState extends RateLimit {
  remaining: number;
  resetSeconds: number;
  exceeded: boolean;
}

export const API_KEY_PER_MINUTE = 100;
export const ORGANIZATION_PER_HOUR = 1000;

/** The limits that apply to the request's caller: its API key, and the organization it acts in. */
export function limitsFor(ctx: Context, overrides: Partial<{ apiKeyPerMinute: number; organizationPerHour: number }> = {}): RateLimit[] {
  const actor = ctx.actor;
  if (!actor) return [];
  const limits: RateLimit[] = [];
  if (actor.kind === 'apiKey') {
    limits.push({ name: 'api_key', key: `key:${actor.apiKeyId}`, limit: overrides.apiKeyPerMinute ?? API_KEY_PER_MINUTE, windowSeconds: 60 });
  }
  if (actor.organizationId) {
    limits.push({ name: 'organization', key: `org:${actor.organizationId}`, limit: overrides.organizationPerHour ?? ORGANIZATION_PER_HOUR, windowSeconds: 3600 });
  }
  return limits;
}

/** Counts one request against each limit and returns where each stands. */
export async function consume(ctx: Context, limits: RateLimit[]): Promise<RateLimitState[]> {
  const now = ctx.clock.now();
  const states: RateLimitState[] = [];
  for (const limit of limits) {
    const [row] = await ctx.db.$queryRaw<{ count: number; window_start: Date }[]>`
      insert into rate_limit_counters (key, window_start, count) values (${limit.key}, ${now}, 1)
      on conflict (key) do update set
        count = case when rate_limit_counters.window_start <= ${now}::timestamp - make_interval(secs => ${limit.windowSeconds})
                     then 1 else rate_limit_counters.count + 1 end,
        window_start = case when rate_limit_counters.window_start <= ${now}::timestamp - make_interval(secs => ${limit.windowSeconds})
                     then ${now} else rate_limit_counters.window_start end
      returning count, window_start`;
    const resetAt = row!.window_start.getTime() + limit.windowSeconds * 1000;
    states.push({
      ...limit,
      remaining: Math.max(0, limit.limit - row!.count),
      resetSeconds: Math.max(1, Math.ceil((resetAt - now.getTime()) / 1000)),
      exceeded: row!.count > limit.limit,
    });
  }
  return states;
}
