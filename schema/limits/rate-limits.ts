// Request rate limits (the interface's Limits table), counted in fixed windows in PostgreSQL, so every API process
// shares the counts; a process leases requests from the counters in blocks (lib/rate-limit-leases.ts). The defaults
// live here only; RATE_LIMIT_* override them.
import type { Actor, Context } from '../context.ts';
import { hotQuery, Prisma } from '../db.ts';
import type { CounterRow, RateLimit, RateLimitState } from '../lib/rate-limit-leases.ts';
import { expected } from '../lib/expected.ts';

export type { RateLimit, RateLimitState };

export interface RateLimitSettings {
  apiKeyPerMinute: number;
  organizationPerHour: number;
  /** A directory's SCIM token, counted apart from the organization's API requests. */
  scimTokenPerMinute: number;
}

/**
 * The interface's numbers: 100 requests a minute per API key, 1000 an hour per organization. A directory's token
 * gets 6,000 a minute: a directory's first sync of 10,000 people sends a lookup and a create for each, and Entra ID
 * and Okta slow down on 429 but count a sync's refusals as failures.
 */
export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  apiKeyPerMinute: 100,
  organizationPerHour: 1000,
  scimTokenPerMinute: 6000,
};

/** The limits that apply to the request's caller: its API key, and the organization it acts in. */
export function limitsFor(ctx: Context, settings: Partial<RateLimitSettings> = {}): RateLimit[] {
  return ctx.actor ? limitsOf(ctx.actor, settings) : [];
}

/** The limits that apply to `actor`: its API key, and the organization it acts in. */
export function limitsOf(actor: Actor, settings: Partial<RateLimitSettings> = {}): RateLimit[] {
  const { apiKeyPerMinute, organizationPerHour } = { ...DEFAULT_RATE_LIMITS, ...settings };
  const limits: RateLimit[] = [];
  if (actor.kind === 'apiKey')
    limits.push({ name: 'api_key', key: `key:${actor.apiKeyId}`, limit: apiKeyPerMinute, windowSeconds: 60 });
  if (actor.organizationId) {
    limits.push({
      name: 'organization',
      key: `org:${actor.organizationId}`,
      limit: organizationPerHour,
      windowSeconds: 3600,
    });
  }
  return limits;
}

/** The limit of a directory's SCIM token (docs/architecture.md#directory-provisioning): its own, not its organization's. */
export function scimTokenLimit(tokenId: string, settings: Partial<RateLimitSettings> = {}): RateLimit {
  const limit = settings.scimTokenPerMinute ?? DEFAULT_RATE_LIMITS.scimTokenPerMinute;
  return { name: 'scim_token', key: `scim:${tokenId}`, limit, windowSeconds: 60 };
}

const WINDOW_NAMES: Record<number, string> = { 60: 'a minute', 3600: 'an hour' };
const PER: Record<RateLimit['name'], string> = {
  api_key: 'per API key',
  organization: 'per organization',
  scim_token: 'per directory token',
};

/** What a 429 says: the limit that was passed, with the numbers in force. */
export function describeLimit(limit: RateLimit): string {
  const window = WINDOW_NAMES[limit.windowSeconds] ?? `in ${limit.windowSeconds} seconds`;
  return `Rate limit exceeded: ${limit.limit} requests ${window} ${PER[limit.name]}`;
}

/**
 * The statement that adds `block` requests to `limit`'s counter in its fixed window (a lease:
 * lib/rate-limit-leases.ts) and returns the row (count, window_start). `source` is what the count depends on
 * (`from t where ...`): a hot path that authenticates in the same statement counts only a caller it accepted. Every statement that counts is built here.
 * The table is unlogged (its migration says why).
 */
export function countSql(
  limit: Pick<RateLimit, 'key' | 'windowSeconds'>,
  block: number,
  now: Date,
  source: Prisma.Sql = Prisma.empty,
): Prisma.Sql {
  const expired = Prisma.sql`r.window_start <= ${now}::timestamp(3) - make_interval(secs => ${limit.windowSeconds}::int)`;
  return Prisma.sql`
    insert into rate_limit_counters as r (key, window_start, count) select ${limit.key}::text, ${now}::timestamp(3), ${block}::int ${source}
    on conflict (key) do update set
      count = case when ${expired} then excluded.count else r.count + excluded.count end,
      window_start = case when ${expired} then ${now}::timestamp(3) else r.window_start end
    returning r.count, r.window_start`;
}

/** Counts one request against each limit and returns where each stands. */
export async function consume(ctx: Context, limits: RateLimit[]): Promise<RateLimitState[]> {
  const now = ctx.clock.now();
  const states: RateLimitState[] = [];
  for (const limit of limits) {
    const state = await ctx.rateLimitLeases.count(limit, now, async (block) => {
      const [row] = await hotQuery<CounterRow>(ctx.db, countSql(limit, block, now));
      return expected(row, 'the counter row');
    });
    states.push(expected(state, `the state of limit ${limit.name}`));
  }
  return states;
}
