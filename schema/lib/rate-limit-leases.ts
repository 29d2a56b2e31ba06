// A process's leases on the shared rate-limit counters. Counting every request in its counter row made each
// request of an organization write the one row that all its requests write (docs/architecture.md#hot-paths forbids
// such rows): the statement that counts takes a block of requests from the row instead, and the process answers the
// next requests of that caller from the block without a statement. The limit still holds across processes, since
// a block is granted under the row's lock and never beyond the limit. What a process holds unused is counted as
// spent for the others, so a block is at most a tenth of what is left (and never above MAX_BLOCK): near the limit
// every request counts in the row again. In one process the remaining count in the headers is exact.
//
// It imports nothing, and lies below the Context, which holds the process's leases, and below limits/rate-limits.ts,
// which reads the Context: both build on it without an import running back up.

/** A limit that applies to a caller (limits/rate-limits.ts limitsOf): `limit` requests per window, counted under `key`. */
export interface RateLimit {
  name: 'api_key' | 'organization' | 'scim_token';
  key: string;
  limit: number;
  windowSeconds: number;
}

/** Where a caller stands against one limit after a request was counted. */
export interface RateLimitState extends RateLimit {
  remaining: number;
  resetSeconds: number;
  exceeded: boolean;
}

/** The counter row as the statement that leases left it. */
export interface CounterRow {
  count: number;
  window_start: Date;
}

interface Lease {
  windowStart: number;
  windowEnd: number;
  /** The row's count after this process's last lease in the window, capped at the limit. */
  spent: number;
  /** Requests leased and not yet used. */
  left: number;
}

/** The most requests one statement leases. */
const MAX_BLOCK = 50;
/** How many callers' leases a process keeps; past that, those of ended windows are dropped, then the oldest. */
const MAX_LEASES = 10_000;

export class RateLimitLeases {
  readonly #leases = new Map<string, Lease>();
  readonly #leasing = new Map<string, Promise<unknown>>();

  /**
   * Counts one request against `limit` at `now`: from the process's lease when it holds one for the current
   * window, else through `lease(block)`, the statement that adds `block` to the counter row and returns it (null
   * when it counted nothing, for a caller that did not stand; so is the answer). One statement leases at a time per
   * limit: the process's other requests of that caller wait for it rather than each leasing a block.
   */
  async count(
    limit: RateLimit,
    now: Date,
    lease: (block: number) => Promise<CounterRow | null>,
  ): Promise<RateLimitState | null> {
    for (;;) {
      const held = this.#take(limit, now);
      if (held) return held;
      const pending = this.#leasing.get(limit.key);
      if (!pending) break;
      await pending.catch(() => undefined);
    }
    const block = this.#blockFor(limit, now);
    const leasing = lease(block);
    this.#leasing.set(limit.key, leasing);
    let row: CounterRow | null;
    try {
      row = await leasing;
    } finally {
      this.#leasing.delete(limit.key);
    }
    return row ? this.#settle(limit, row, block, now) : null;
  }

  /** Returns the request `count` took for a caller that then did not stand, as if it had not been counted. */
  giveBack(limit: RateLimit, now: Date): void {
    const lease = this.#leases.get(limit.key);
    if (lease && now.getTime() < lease.windowEnd) lease.left += 1;
  }

  #take(limit: RateLimit, now: Date): RateLimitState | null {
    const lease = this.#leases.get(limit.key);
    if (!lease || lease.left === 0 || now.getTime() >= lease.windowEnd) return null;
    lease.left -= 1;
    return stateOf(limit, lease, now, false);
  }

  /** A tenth of what the counter had left at this process's last lease in the window, 1 to MAX_BLOCK. */
  #blockFor(limit: RateLimit, now: Date): number {
    const lease = this.#leases.get(limit.key);
    const spent = lease && now.getTime() < lease.windowEnd ? lease.spent : 0;
    return Math.min(MAX_BLOCK, Math.max(1, Math.floor((limit.limit - spent) / 10)));
  }

  /** Records what the statement granted of `block` (it added `block` to the count, so the row had count - block). */
  #settle(limit: RateLimit, row: CounterRow, block: number, now: Date): RateLimitState {
    const granted = Math.max(0, Math.min(block, limit.limit - (row.count - block)));
    const windowStart = row.window_start.getTime();
    let lease = this.#leases.get(limit.key);
    if (!lease || lease.windowStart !== windowStart) {
      this.#keepRoom(now);
      lease = { windowStart, windowEnd: windowStart + limit.windowSeconds * 1000, spent: 0, left: 0 };
      this.#leases.set(limit.key, lease);
    }
    lease.spent = Math.max(lease.spent, Math.min(row.count, limit.limit));
    lease.left += granted;
    if (lease.left === 0) return stateOf(limit, lease, now, true);
    lease.left -= 1;
    return stateOf(limit, lease, now, false);
  }

  #keepRoom(now: Date): void {
    if (this.#leases.size < MAX_LEASES) return;
    for (const [key, lease] of this.#leases) if (now.getTime() >= lease.windowEnd) this.#leases.delete(key);
    for (const key of this.#leases.keys()) {
      if (this.#leases.size < MAX_LEASES) break;
      this.#leases.delete(key);
    }
  }
}

function stateOf(limit: RateLimit, lease: Lease, now: Date, exceeded: boolean): RateLimitState {
  return {
    ...limit,
    remaining: limit.limit - lease.spent + lease.left,
    resetSeconds: Math.max(1, Math.ceil((lease.windowEnd - now.getTime()) / 1000)),
    exceeded,
  };
}
