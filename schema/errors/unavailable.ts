// A database that is down, restarting or saturated is a condition of the service, not of the request: every
// interface answers it 503 with Retry-After, never 500 (docs/architecture.md#hot-paths), and recovers by itself
// when PostgreSQL is back (the pool drops dead connections and opens new ones).
import { DomainError } from './index.ts';

/** Seconds a client should wait before retrying while the database is unavailable. */
export const RETRY_AFTER_SECONDS = 2;

export class ServiceUnavailableError extends DomainError {
  readonly retryAfterSeconds = RETRY_AFTER_SECONDS;
  constructor(message = 'The service is temporarily unavailable; try again shortly') {
    super('service_unavailable', message, { retryAfter: RETRY_AFTER_SECONDS });
  }
}

// Prisma: P1001 unreachable, P1002 timed out, P1008 operation timed out, P1017 connection closed, P2024 pool
// timeout, P2028 transaction could not start or expired, P2037 too many connections.
const PRISMA_UNAVAILABLE = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028', 'P2037']);
// PostgreSQL: 57P01-03 shutting down / cannot connect now, 53300 too many connections, 08* connection exceptions,
// and 25006, a write reaching a server still in recovery: during a failover the proxy sends connections to the
// standby that Patroni names primary a moment before its promotion ends (test/e2e/failover.test.ts); and 40P01, a
// statement chosen as a deadlock's victim (by a migration's lock, say), which succeeds when sent again.
const POSTGRES_UNAVAILABLE = /^(57P0[123]|53300|53400|08\d{3}|25006|40P01)$/;
const SOCKET_UNAVAILABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);
const ADAPTER_UNAVAILABLE = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionAlreadyClosed',
]);
const MESSAGE_UNAVAILABLE =
  /timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error|terminating connection due to administrator command|the database system is (shutting down|starting up|in recovery mode)|Can't reach database server|Unable to start a transaction in the given time|cannot be executed on an expired transaction|Connection ended unexpectedly/i;

/**
 * True for an error that means the database is down, restarting or saturated (no connection to be had in time). Looks through Prisma's wrappers to the driver's error.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 5) return false;
  const e = error as {
    code?: unknown;
    kind?: unknown;
    originalCode?: unknown;
    message?: unknown;
    cause?: unknown;
    meta?: { driverAdapterError?: unknown };
  };
  if (
    typeof e.code === 'string' &&
    (PRISMA_UNAVAILABLE.has(e.code) || POSTGRES_UNAVAILABLE.test(e.code) || SOCKET_UNAVAILABLE.has(e.code))
  )
    return true;
  if (typeof e.originalCode === 'string' && POSTGRES_UNAVAILABLE.test(e.originalCode)) return true;
  if (typeof e.kind === 'string' && ADAPTER_UNAVAILABLE.has(e.kind)) return true;
  if (typeof e.message === 'string' && MESSAGE_UNAVAILABLE.test(e.message)) return true;
  return isDatabaseUnavailable(e.cause, depth + 1) || isDatabaseUnavailable(e.meta?.driverAdapterError, depth + 1);
}
