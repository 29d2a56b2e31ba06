// Slows down password guessing: failures are counted per account and per client address in a window; past
// a threshold each further attempt is refused for a lock time that doubles, up to a ceiling. One statement
// per check, shared through PostgreSQL by every API process.
import type { Context } from '../../context.ts';
import { RateLimitedError } from '../../errors/index.ts';

const WINDOW_SECONDS = 15 * 60;
const MAX_LOCK_SECONDS = 15 * 60;
const LIMITS = { account: 5, address: 20 } as const;

const keysFor = (email: string, ip: string | null) =>
  [
    { key: `account:${email}`, limit: LIMITS.account },
    ...(ip ? [{ key: `address:${ip}`, limit: LIMITS.address }] : []),
  ] as const;

export async function assertNotThrottled(ctx: Context, email: string): Promise<void> {
  const now = ctx.clock.now();
  const rows = await ctx.db.loginThrottle.findMany({
    where: { key: { in: keysFor(email, ctx.request.ip).map((k) => k.key) }, lockedUntil: { gt: now } },
    select: { lockedUntil: true },
  });
  const until = Math.max(0, ...rows.map((r) => r.lockedUntil!.getTime()));
  if (until > now.getTime()) throw new RateLimitedError(Math.ceil((until - now.getTime()) / 1000));
}

export async function recordFailedLogin(ctx: Context, email: string): Promise<void> {
  const now = ctx.clock.now();
  for (const { key, limit } of keysFor(email, ctx.request.ip)) {
    // Start a new window when the old one is over; lock for 2^(failures-limit) seconds past the limit.
    await ctx.db.$executeRaw`
      insert into login_throttles (key, failures, window_start, locked_until) values (${key}, 1, ${now}, null)
      on conflict (key) do update set
        failures = case when login_throttles.window_start < ${now}::timestamp - make_interval(secs => ${WINDOW_SECONDS})
                        then 1 else login_throttles.failures + 1 end,
        window_start = case when login_throttles.window_start < ${now}::timestamp - make_interval(secs => ${WINDOW_SECONDS})
                        then ${now} else login_throttles.window_start end,
        locked_until = case when login_throttles.window_start >= ${now}::timestamp - make_interval(secs => ${WINDOW_SECONDS})
                             and login_throttles.failures + 1 >= ${limit}
                        then ${now}::timestamp + make_interval(secs => least(${MAX_LOCK_SECONDS}, power(2, login_throttles.failures + 1 - ${limit})::int))
                        else null end`;
  }
}

export async function clearFailedLogins(ctx: Context, email: string): Promise<void> {
  await ctx.db.loginThrottle.deleteMany({ where: { key: `account:${email}` } });
}
