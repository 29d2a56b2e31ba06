// One attempt of a signed push on the webhook retry schedule, shared by webhook deliveries and app notices: sign the
// stored body with the current secret, check the URL again and POST to the checked address, then step the row on
// from the state the attempt started in and queue the next attempt in the same statement. Each domain keeps what it
// loads, when it skips, and what it records besides (webhook attempts and failing marks, a notice's last error).
import type { Db } from '../db.ts';
import { Prisma, statementName } from '../db.ts';
import type { Clock } from '../lib/clock.ts';
import { checkDestination, DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from './destination.ts';
import { DestinationError } from './push.errors.ts';
import { unseal } from '../lib/sealed.ts';
import { signatureHeaders } from './secret.ts';
import { send, type SendResult } from './sender.ts';
import { isDatabaseUnavailable } from '../errors/unavailable.ts';

/** Seconds to wait after attempt n (1-based) before attempt n+1: attempts at 0, 1, 5, 15 and 60 minutes. */
export const RETRY_DELAYS_SECONDS = [60, 4 * 60, 10 * 60, 45 * 60] as const;
export const SCHEDULED_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** How long a running attempt may hold its job before a sweep assumes its worker died and runs it again. */
export const STUCK_AFTER_SECONDS = 120;

/** Runs one raw statement and returns its rows. */
export type RunSql = <T>(query: Prisma.Sql) => Promise<T[]>;

export interface AttemptDeps {
  db: Db;
  clock: Clock;
  secretKey: Uint8Array;
  webhooks?: WebhookSettings;
  /** Where an attempt's statements run; Prisma's raw queries by default. */
  sql?: RunSql;
}

export const sqlOf = (deps: Pick<AttemptDeps, 'db' | 'sql'>): RunSql =>
  deps.sql ?? (<T>(query: Prisma.Sql) => deps.db.$queryRaw<T[]>(query));

export interface PgQuery {
  /** Prepared under this name (statementName, schema/db.ts); unnamed past its cap. */
  name: string | undefined;
  text: string;
  values: unknown[];
}

/**
 * The statements on a plain pg connection (a worker's own pool), prepared: through Prisma, a raw statement cost about
 * as much CPU as the rest of an attempt. Times go as ISO text, which the timestamp(3) casts read as UTC, as Prisma
 * writes them.
 */
export const pgSql =
  (query: (q: PgQuery) => Promise<{ rows: unknown[] }>): RunSql =>
  async <T>(q: Prisma.Sql) =>
    (
      await query({
        name: statementName(q.text),
        text: q.text,
        values: q.values.map((v) => (v instanceof Date ? v.toISOString() : v)),
      })
    ).rows as T[];

export type AttemptOutcome = 'skipped' | 'delivered' | 'retrying' | 'failed';

export interface SignedMessage {
  /** webhook-id: the same on every attempt, the receiver's idempotency key. */
  eventId: string;
  deliveryId: string;
  kind: string;
  body: string;
}

export const isAccepted = (result: { statusCode: number | null }) =>
  result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;

// Decrypted secrets by ciphertext: a decryption (JWE, on the thread pool) per attempt was a large share of its CPU.
// A rotated secret has a new ciphertext, so it is never served stale; the map is emptied when it grows large.
const secrets = new Map<string, Promise<string>>();
const SECRETS_KEPT = 1000;
function cachedSecret(secretEncrypted: string, secretKey: Uint8Array): Promise<string> {
  let secret = secrets.get(secretEncrypted);
  if (!secret) {
    if (secrets.size >= SECRETS_KEPT) secrets.clear();
    secret = unseal(secretEncrypted, secretKey);
    secret.catch(() => secrets.delete(secretEncrypted));
    secrets.set(secretEncrypted, secret);
  }
  return secret;
}

/** The headers that sign `message` with the stored secret, timestamped after the secret is at hand. */
export async function signMessage(
  deps: Pick<AttemptDeps, 'clock' | 'secretKey'>,
  secretEncrypted: string,
  message: SignedMessage,
) {
  const secret = await cachedSecret(secretEncrypted, deps.secretKey);
  const at = deps.clock.now();
  return { at, headers: signatureHeaders(secret, { ...message, timestamp: at }) };
}

/** A queue of attempts: a job per attempt carrying {<idKey>, attempt}, keyed `<keyPrefix><id>` so a sweep can move it. */
export interface AttemptLane {
  task: string;
  idKey: string;
  keyPrefix: string;
}

export function assertAttemptJob(lane: AttemptLane, payload: unknown): { id: string; attempt: number } {
  const p = payload as Record<string, unknown> | null;
  const id = p?.[lane.idKey];
  const attempt = p?.attempt;
  if (typeof id !== 'string' || !Number.isInteger(attempt) || (attempt as number) < 1) {
    throw new Error(`${lane.task}: expected {${lane.idKey}, attempt}, got ${JSON.stringify(payload)}`);
  }
  return { id, attempt: attempt as number };
}

type SqlValue<T> = Prisma.Sql | T;

/**
 * The job of attempt `attempt` of row `id`, in named queue `queue` or none; a null run_at runs it now. (A webhook
 * delivery's job is the SQL function tessera_webhook_delivery_job, which the fan-out trigger shares.)
 */
export const attemptJobSql = (
  lane: AttemptLane,
  id: SqlValue<string>,
  queue: Prisma.Sql | null,
  attempt: SqlValue<number>,
  runAt: Date | null,
) => Prisma.sql`
  graphile_worker.add_job(${lane.task}::text, json_build_object(${lane.idKey}::text, (${id})::text, 'attempt', (${attempt})::int),
    queue_name => ${queue ?? Prisma.sql`null`}::text, run_at => ${runAt?.toISOString() ?? null}::timestamptz, job_key => ${lane.keyPrefix}::text || (${id})::text)`;

export interface Attempted {
  attempt: number;
  startedAt: Date;
  headers: Record<string, string>;
  result: SendResult;
  success: boolean;
  /** When the next attempt is due; null when this one succeeded or was the last of the schedule. */
  next: Date | null;
  status: 'delivered' | 'pending' | 'failed';
  /** When the outcome is recorded. */
  now: Date;
}

/**
 * Where an attempt stands: by default attempt n is the schedule's n-th, and should it fail the next is due the
 * schedule's delay after it started. A manual attempt (a webhook's Retry now) is outside the schedule: should it fail,
 * the next is the scheduled one still to come, at `next` (null: none is left).
 */
export type AttemptSlot = { scheduled: number } | { manual: true; next: Date | null };

/** Sends attempt `attempt` of a message to `url`; a URL that the guard refuses now counts as a failed attempt. */
export async function attemptSigned(
  deps: AttemptDeps,
  attempt: number,
  target: SignedMessage & { url: string; secretEncrypted: string },
  slot: AttemptSlot = { scheduled: attempt },
): Promise<Attempted> {
  const settings = deps.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;
  const { at: startedAt, headers } = await signMessage(deps, target.secretEncrypted, target);
  let result: SendResult;
  try {
    const destination = await checkDestination(target.url, settings);
    result = await send(destination, headers, target.body, { timeoutMs: settings.timeoutMs, ca: settings.ca });
  } catch (error) {
    if (!(error instanceof DestinationError)) throw error;
    result = { statusCode: null, headers: null, body: null, error: `refused: the URL ${error.message}`, durationMs: 0 };
  }
  const success = isAccepted(result);
  const delay = 'scheduled' in slot ? RETRY_DELAYS_SECONDS[slot.scheduled - 1] : undefined;
  const next = success
    ? null
    : 'scheduled' in slot
      ? delay !== undefined
        ? new Date(startedAt.getTime() + delay * 1000)
        : null
      : slot.next;
  const status = success ? 'delivered' : next ? 'pending' : 'failed';
  return { attempt, startedAt, headers, result, success, next, status, now: deps.clock.now() };
}

/**
 * The row's step from the state this attempt started in, so a duplicate run of the job matches nothing and records
 * nothing; `also` sets the domain's own columns (", col = value"). The caller adds `returning`.
 */
export const advanceSql = (
  table: 'webhook_deliveries' | 'app_notifications',
  id: string,
  a: Attempted,
  also: Prisma.Sql = Prisma.empty,
) => Prisma.sql`
  update ${Prisma.raw(table)} set attempts = ${a.attempt}::int, status = ${a.status}::text, next_attempt_at = ${a.next}::timestamp(3),
    last_status_code = ${a.result.statusCode}::int, updated_at = ${a.now}::timestamp(3),
    delivered_at = case when ${a.success}::boolean then ${a.now}::timestamp(3) else delivered_at end ${also}
  where id = ${id}::text and attempts = ${a.attempt - 1}::int and status = 'pending'`;

/** The id of the next attempt's job, queued only when one is due. */
export const nextJobSql = (a: Attempted, job: Prisma.Sql) =>
  Prisma.sql`case when ${a.next !== null}::boolean then (${job}).id end`;

/**
 * Runs `record`, the statement that steps the row on and records attempt `a`. Should it fail for anything but the
 * database being unavailable (whatever the receiver answered, it is the reply that may not fit), it runs again
 * without the reply: the attempt was made, so it is counted, and the schedule's limit and the failing mark hold.
 */
export async function recordAttempt(a: Attempted, record: (a: Attempted) => Promise<unknown>): Promise<void> {
  try {
    await record(a);
  } catch (error) {
    if (isDatabaseUnavailable(error)) throw error;
    await record({
      ...a,
      result: {
        ...a.result,
        headers: null,
        body: null,
        error: `${a.result.error ?? 'answered'}; the reply could not be recorded`,
      },
    });
  }
}

export const outcomeOf = (a: Attempted): AttemptOutcome =>
  a.status === 'delivered' ? 'delivered' : a.status === 'pending' ? 'retrying' : 'failed';
