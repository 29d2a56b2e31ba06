// Slows down password guessing, per account and per client address. Each attempt is counted BEFORE its password
// is checked, by one upsert that increments and returns the count, and is refused past the limit: so however
// many guesses arrive at once, at most `limit` of them reach a password check in a window (a read followed by a
// write let 13 of 40 parallel guesses through a limit of 5). The first refusal locks the counter for
// LOCK_SECONDS; then the count starts afresh. A password that proves right gives its attempt back. Shared
// through PostgreSQL by every API process.
import type { Context } from '../../context.ts';
import { RateLimitedError } from '../../errors/index.ts';
import { addSeconds } from '../../lib/clock.ts';
import { countThrottledAttempt, type ThrottleLock } from '../audit/audit.service.ts';

/** Attempts are counted in a window of this length from the first one. */
const WINDOW_SECONDS = 15 * 60;
/** How long a counter stays locked after its first refusal (OWASP: lock out for minutes, not seconds). */
const LOCK_SECONDS = 15 * 60;
/** Attempts a window admits: per account, and per address (many accounts tried from one place). */
const LIMITS = { account: 5, address: 20 } as const;

const accountKey = (email: string) => `account:${email}`;
const addressKey = (ip: string) => `address:${ip}`;

/** Counts one attempt against `key` and says whether it is admitted, and until when the key is locked. */
async function countAttempt(ctx: Context, key: string, limit: number, now: Date) {
  // The window is over when the lock has run out, or, with no lock, when WINDOW_SECONDS have passed.
  const [row] = await ctx.db.$queryRaw<{ failures: number; locked_until: Date | null }[]>`
    insert into login_throttles as t (key, failures, window_start, locked_until) values (${key}, 1, ${now}::timestamp, null)
    on conflict (key) do update set
      failures = case when coalesce(t.locked_until, t.window_start + make_interval(secs => ${WINDOW_SECONDS})) <= ${now}::timestamp
                      then 1 else t.failures + 1 end,
      window_start = case when coalesce(t.locked_until, t.window_start + make_interval(secs => ${WINDOW_SECONDS})) <= ${now}::timestamp
                      then ${now}::timestamp else t.window_start end,
      locked_until = case when coalesce(t.locked_until, t.window_start + make_interval(secs => ${WINDOW_SECONDS})) <= ${now}::timestamp
                          then null
                          when t.locked_until is null and t.failures + 1 > ${limit}
                          then ${now}::timestamp + make_interval(secs => ${LOCK_SECONDS})
                          else t.locked_until end
    returning failures, locked_until`;
  return { admitted: row!.failures <= limit, lockedUntil: row!.locked_until };
}

/**
 * Admits one password attempt for `email` from the request's address, or refuses it with 429 and Retry-After
 * (the refusal is audited, aggregated per lock). Call it before the password is checked, outside a transaction.
 */
export async function admitPasswordAttempt(ctx: Context, email: string): Promise<void> {
  const now = ctx.clock.now();
  const ip = ctx.request.ip;
  const counters = [{ key: accountKey(email), limit: LIMITS.account }, ...(ip ? [{ key: addressKey(ip), limit: LIMITS.address }] : [])];
  for (const { key, limit } of counters) {
    const { admitted, lockedUntil } = await countAttempt(ctx, key, limit, now);
    if (admitted) continue;
    const until = lockedUntil ?? addSeconds(now, LOCK_SECONDS);
    const lock: ThrottleLock = { key, since: addSeconds(until, -LOCK_SECONDS), until };
    await countThrottledAttempt(ctx, email, lock);
    throw new RateLimitedError(Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000)));
  }
}

/**
 * The password proved right: the account's count is cleared, and the address gets its attempt back (its row goes
 * when nothing is left on it). One statement.
 */
export async function passwordAccepted(ctx: Context, email: string): Promise<void> {
  const address = ctx.request.ip ? addressKey(ctx.request.ip) : null;
  await ctx.db.$executeRaw`
    with account as (delete from login_throttles where key = ${accountKey(email)}),
         spent as (delete from login_throttles where key = ${address} and failures <= 1)
    update login_throttles set failures = failures - 1 where key = ${address} and failures > 1`;
}
