// Slows down password guessing, per account and per client address, shared through PostgreSQL by every API
// process. A locked counter refuses an attempt before its password is hashed. A wrong password is counted by one
// upsert that increments and returns the count, and the answer follows that count: however many guesses arrive
// at once, at most `limit` of them are answered "wrong password" in a window (a read followed by a write let 13 of
// 40 parallel guesses through a limit of 5); the rest are refused with 429, and so is a right password that
// completes once the counter is locked, so a burst learns no more than `limit` guesses. Right passwords are never
// counted: any number of people may sign in to one account, or from one address, at once.
//
// The address counter locks guesses, not people (docs/architecture.md#identity-sessions-and-tokens): a sign-in
// that carries the device cookie of the account it is for (auth/device-cookie.ts, set by an earlier sign-in in that
// browser) is not held by its address, neither refused by its lock nor counted against it. One office behind one
// address keeps signing in while someone there sprays guesses at other accounts; the account counter holds for
// every browser alike.
import type { Context } from '../../context.ts';
import { Prisma } from '../../db.ts';
import { RateLimitedError } from '../../errors/index.ts';
import { addSeconds } from '../../lib/clock.ts';
import { verifyPassword } from '../../lib/crypto.ts';
import { countThrottledAttempt } from '../audit/audit.service.ts';
import { deviceAccountOf } from './device-cookie.ts';

/**
 * Wrong passwords a window admits, how long the window runs from its first failure, and how long a counter stays
 * locked once it reaches its limit (OWASP: lock out for minutes, not seconds). An account: 5 in 15 minutes, locked
 * 15 minutes. An address (many accounts tried from one place): 100 in an hour, locked an hour, so that it admits at
 * most 100 guesses an hour (Auth0 blocks an address after 100 by default), and a shared NAT's typos never reach it.
 */
const COUNTERS = {
  account: { limit: 5, windowSeconds: 15 * 60, lockSeconds: 15 * 60 },
  address: { limit: 100, windowSeconds: 60 * 60, lockSeconds: 60 * 60 },
} as const;
type Counter = { key: string } & (typeof COUNTERS)[keyof typeof COUNTERS];

const accountKey = (email: string) => `account:${email}`;
const addressKey = (ip: string) => `address:${ip}`;
const lockSecondsOf = (key: string) => (key.startsWith('address:') ? COUNTERS.address : COUNTERS.account).lockSeconds;

/**
 * The counters of an attempt on `email` (null: a sign-in that names no account until it is proved, a passkey,
 * counted per address only). The address is left out when the request carries the device cookie of `owner`, the
 * account the attempt is for (`email`, or a passkey's owner once it is known).
 */
async function countersOf(ctx: Context, email: string | null, owner: string | null = email): Promise<Counter[]> {
  const ip = ctx.request.ip;
  const known = owner !== null && !!ctx.request.deviceCookie && (await deviceAccountOf(ctx)) === owner;
  return [
    ...(email === null ? [] : [{ key: accountKey(email), ...COUNTERS.account }]),
    ...(ip && !known ? [{ key: addressKey(ip), ...COUNTERS.address }] : []),
  ];
}

/** Refuses with 429 and Retry-After, the refusal audited (aggregated per lock). */
async function refuse(ctx: Context, email: string | null, key: string, until: Date, now: Date): Promise<never> {
  await countThrottledAttempt(ctx, email ?? '', { key, since: addSeconds(until, -lockSecondsOf(key)), until });
  throw new RateLimitedError(Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000)));
}

/**
 * Before the password is checked (outside a transaction): a locked account or address is refused. One statement.
 * A passkey sign-in asks too, with no account (null): its failures count against the address alone, and a device
 * cookie of the passkey's owner (`owner`, null for a passkey nobody has) lets it past the address's lock.
 */
export async function admitPasswordAttempt(
  ctx: Context,
  email: string | null,
  owner: string | null = email,
): Promise<void> {
  const now = ctx.clock.now();
  const keys = (await countersOf(ctx, email, owner)).map((c) => c.key);
  if (!keys.length) return;
  const [locked] = await ctx.db.$queryRaw<{ key: string; locked_until: Date }[]>`
    select key, locked_until from login_throttles where key = any(${keys}::text[]) and locked_until > ${now}::timestamp
    order by locked_until desc limit 1`;
  if (locked) await refuse(ctx, email, locked.key, locked.locked_until, now);
}

/** Counts one failure against `key` in one upsert; reaching `limit` locks it. Returns the count and the lock. */
async function countFailure(ctx: Context, { key, limit, windowSeconds, lockSeconds }: Counter, now: Date) {
  // The window is over when the lock has run out, or, with no lock, when windowSeconds have passed.
  const [row] = await ctx.db.$queryRaw<{ failures: number; locked_until: Date | null }[]>`
    insert into login_throttles as t (key, failures, window_start, locked_until)
    values (${key}, 1, ${now}::timestamp, case when ${limit}::int <= 1 then ${addSeconds(now, lockSeconds)}::timestamp end)
    on conflict (key) do update set
      failures = case when coalesce(t.locked_until, t.window_start + make_interval(secs => ${windowSeconds})) <= ${now}::timestamp
                      then 1 else t.failures + 1 end,
      window_start = case when coalesce(t.locked_until, t.window_start + make_interval(secs => ${windowSeconds})) <= ${now}::timestamp
                      then ${now}::timestamp else t.window_start end,
      locked_until = case when coalesce(t.locked_until, t.window_start + make_interval(secs => ${windowSeconds})) <= ${now}::timestamp
                          then null
                          when t.locked_until is null and t.failures + 1 >= ${limit}::int
                          then ${addSeconds(now, lockSeconds)}::timestamp
                          else t.locked_until end
    returning failures, locked_until`;
  // An upsert returns its row, inserted or updated.
  if (!row) throw new Error('countFailure: the throttle upsert returned no row');
  return row;
}

/**
 * The password was wrong: counts it, the account first. Returns when it is within the limits (the caller answers
 * 401); past a limit, refuses with 429, and a guess refused for its account is not counted against its address. A
 * browser with the account's device cookie is counted against the account alone.
 */
export async function passwordRejected(ctx: Context, email: string | null): Promise<void> {
  const now = ctx.clock.now();
  for (const counter of await countersOf(ctx, email)) {
    const { failures, locked_until: lockedUntil } = await countFailure(ctx, counter, now);
    if (failures > counter.limit)
      await refuse(ctx, email, counter.key, lockedUntil ?? addSeconds(now, counter.lockSeconds), now);
  }
}

/**
 * The password was right. If concurrent wrong guesses locked the account meanwhile, the sign-in is refused like
 * them (a burst must not tell a right guess from a wrong one); otherwise the account's count is cleared. One
 * statement.
 */
export async function passwordAccepted(ctx: Context, email: string): Promise<void> {
  const now = ctx.clock.now();
  const keys = (await countersOf(ctx, email)).map((c) => c.key);
  const [locked] = await ctx.db.$queryRaw<{ key: string; locked_until: Date }[]>`
    with locked as (
      select key, locked_until from login_throttles where key = any(${keys}::text[]) and locked_until > ${now}::timestamp
    ), cleared as (
      delete from login_throttles where key = ${accountKey(email)} and not exists (select 1 from locked)
    )
    select key, locked_until from locked order by locked_until desc limit 1`;
  if (locked) await refuse(ctx, email, locked.key, locked.locked_until, now);
}

/** A lock found by acceptedCtes: refused as passwordAccepted refuses one. */
export interface FoundLock {
  key: string;
  lockedUntil: Date;
}

/**
 * passwordAccepted as CTEs, for a sign-in step that proves the person in the same statement (a second factor):
 * `locked` (first) holds the lock of the account or address, if any; `cleared` (after the CTE named `proved`)
 * clears the account's count when `proved` has a row. The statement selects the lock with lockOf.
 */
export async function acceptedCtes(
  ctx: Context,
  email: string,
  proved: string,
): Promise<{ locked: Prisma.Sql; cleared: Prisma.Sql }> {
  const keys = (await countersOf(ctx, email)).map((c) => c.key);
  return {
    locked: Prisma.sql`locked as (
      select key, locked_until from login_throttles where key = any(${keys}::text[]) and locked_until > ${ctx.clock.now()}::timestamp
      order by locked_until desc limit 1)`,
    cleared: Prisma.sql`cleared as (
      delete from login_throttles where key = ${accountKey(email)} and exists (select 1 from ${Prisma.raw(proved)}))`,
  };
}

/** The columns that read acceptedCtes' lock back. */
export const lockOf = Prisma.sql`(select key from locked) as "lockedKey", (select locked_until from locked) as "lockedUntil"`;
/** lockOf's columns: the lock found (its locked_until is later than now, so not null), or nothing. */
export type LockColumns = { lockedKey: string; lockedUntil: Date } | { lockedKey: null; lockedUntil: null };

export async function refuseLocked(ctx: Context, email: string, lock: FoundLock): Promise<never> {
  return refuse(ctx, email, lock.key, lock.lockedUntil, ctx.clock.now());
}

/**
 * A password check of a known account outside sign-in (a current password before a change, an invitation accepted
 * with the password), counted against the same throttle as sign-ins: a stolen session or token cannot guess faster
 * than the login page allows. True when right; a wrong one is counted (and past the limit refused with 429).
 */
export async function checkAccountPassword(
  ctx: Context,
  account: { email: string; passwordHash: string },
  password: string,
): Promise<boolean> {
  await admitPasswordAttempt(ctx, account.email);
  if (await verifyPassword(account.passwordHash, password)) {
    await passwordAccepted(ctx, account.email);
    return true;
  }
  await passwordRejected(ctx, account.email);
  return false;
}

/** The owner proved the account another way (a password reset link): its failures are forgotten. */
export async function forgetFailedSignIns(ctx: Context, email: string): Promise<void> {
  await ctx.db.loginThrottle.deleteMany({ where: { key: accountKey(email) } });
}
