// Rate-limit leases (schema/lib/rate-limit-leases.ts): processes take requests from the shared counter rows in
// blocks, so a caller's requests do not each write its row, and the limit still holds across processes. Two "processes" here are
// two RateLimitLeases on one database, counting through the service's own statement (rate-limits.ts consume).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, onStatement, type Db } from '../../../schema/db.ts';
import { makeContext, type Context, type ContextBase } from '../../../schema/context.ts';
import { RateLimitLeases } from '../../../schema/lib/rate-limit-leases.ts';
import { consume, type RateLimit } from '../../../schema/limits/rate-limits.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { movableClock } from '../../helpers/clock.ts';

let database: TestDatabase;
let db: Db;
const clock = movableClock();

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { maxConnections: 4 });
});
afterAll(async () => {
  await db?.$disconnect();
  await database?.drop();
});

/** A process's view: its own leases on the shared counters. */
function processContext(): Context {
  const base = { db, clock, rateLimitLeases: new RateLimitLeases() } as unknown as ContextBase;
  return makeContext(base, null, { requestId: 'leases', ip: null, userAgent: null });
}

let keys = 0;
const limitOf = (limit: number, windowSeconds = 3600): RateLimit => ({
  name: 'organization',
  key: `org:leases-${++keys}`,
  limit,
  windowSeconds,
});

async function statementsDuring<T>(fn: () => Promise<T>): Promise<{ result: T; statements: number }> {
  let statements = 0;
  const stop = onStatement(db, () => statements++);
  try {
    return { result: await fn(), statements };
  } finally {
    stop();
  }
}

const counterOf = async (limit: RateLimit) =>
  (await db.$queryRaw<{ count: number }[]>`select count from rate_limit_counters where key = ${limit.key}`)[0]?.count;

describe('rate-limit leases', () => {
  it('in one process, report the exact remaining count on every request while most requests send no statement', async () => {
    const limit = limitOf(100);
    const ctx = processContext();
    const { result: states, statements } = await statementsDuring(async () => {
      const seen = [];
      for (let i = 0; i < 101; i++) seen.push((await consume(ctx, [limit]))[0]!);
      return seen;
    });
    expect(states.slice(0, 100).map((s) => s.remaining)).toEqual(Array.from({ length: 100 }, (_, i) => 99 - i));
    expect(states.slice(0, 100).every((s) => !s.exceeded)).toBe(true);
    expect(states[100]).toMatchObject({ exceeded: true, remaining: 0 });
    // Blocks of a tenth of what is left: 10, 9, 8, ... then one by one near the limit.
    expect(statements).toBeLessThan(40);
    expect(statements).toBeGreaterThan(10);
  });

  it('never grant more than the limit across processes, however many requests arrive at once', async () => {
    const limit = limitOf(50);
    const processes = [processContext(), processContext(), processContext()];
    const states = await Promise.all(
      processes.flatMap((ctx) => Array.from({ length: 40 }, () => consume(ctx, [limit]).then((s) => s[0]!))),
    );
    expect(states.filter((s) => !s.exceeded)).toHaveLength(50);
    expect(states.filter((s) => s.exceeded).every((s) => s.remaining === 0)).toBe(true);
    expect(await counterOf(limit)).toBeGreaterThanOrEqual(50);
  });

  it('lease one block at a time per caller in a process: requests arriving together wait for it', async () => {
    const limit = limitOf(1000);
    const ctx = processContext();
    const { result: states, statements } = await statementsDuring(() =>
      Promise.all(Array.from({ length: 30 }, () => consume(ctx, [limit]).then((s) => s[0]!))),
    );
    expect(states.every((s) => !s.exceeded)).toBe(true);
    // A block is 50 here (a tenth of 1000, at most 50): the first statement covers all thirty.
    expect(statements).toBe(1);
    expect(await counterOf(limit)).toBe(50);
    expect(states.map((s) => s.remaining).sort((a, b) => b - a)).toEqual(Array.from({ length: 30 }, (_, i) => 999 - i));
  });

  it('count what other processes hold as spent, and start again in a new window', async () => {
    const limit = limitOf(20, 60);
    const one = processContext();
    const other = processContext();
    expect((await consume(one, [limit]))[0]).toMatchObject({ remaining: 19, exceeded: false }); // a block of 2, one used
    // other sees the two that one leased as spent: 20 - 4 + the one of its own block it has not used.
    expect((await consume(other, [limit]))[0]).toMatchObject({ remaining: 17, exceeded: false });
    for (let i = 0; i < 17; i++) expect((await consume(other, [limit]))[0]!.exceeded).toBe(false);
    // other has taken the rest; one still holds the request it leased and did not use.
    expect((await consume(other, [limit]))[0]).toMatchObject({ exceeded: true, remaining: 0 });
    expect((await consume(one, [limit]))[0]!.exceeded).toBe(false);
    expect((await consume(one, [limit]))[0]).toMatchObject({ exceeded: true, remaining: 0 });
    clock.advance(61);
    expect((await consume(other, [limit]))[0]).toMatchObject({ exceeded: false, remaining: 19 });
    expect(await counterOf(limit)).toBe(2);
  });

  it('take a given-back request again without counting it twice', async () => {
    const limit = limitOf(100);
    const ctx = processContext();
    const first = (await consume(ctx, [limit]))[0]!;
    ctx.rateLimitLeases.giveBack(limit, clock.now());
    const again = (await consume(ctx, [limit]))[0]!;
    expect(again.remaining).toBe(first.remaining);
  });
});
