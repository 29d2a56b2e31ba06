// Housekeeping run by the worker (docs/architecture.md#bounded-storage): credentials that can never be used again,
// and history past its retention, are deleted a batch at a time, so that the tables the hot paths read stay small
// and no statement holds locks over, or writes WAL for, millions of rows.
import { Prisma } from '../../prisma/generated/client/client.ts';
import type { Db } from '../db.ts';

/** How long history is kept, in days; each is set by an environment variable (README, Configuration). */
export interface Retention {
  /** Events and their webhook deliveries and attempts: EVENT_RETENTION_DAYS. */
  events: number;
  /** The mail log and the development mailbox: MAIL_RETENTION_DAYS. */
  mail: number;
  /** The audit log: AUDIT_RETENTION_DAYS. */
  audit: number;
}

export const DEFAULT_RETENTION: Retention = { events: 14, mail: 30, audit: 365 };

/** A credential stays this long past its end, so that a late use of it is told "expired", not "unknown". */
const GRACE_DAYS = 7;
/** What each organization's directory log keeps (its page shows the last 100). */
const SCIM_REQUESTS_KEPT = 1_000;
/** The most rows one statement deletes. */
export const BATCH_ROWS = 5_000;
/** Between two batches of one table: the writers that waited for a batch's locks, and autovacuum, go first. */
const PAUSE_MS = 20;

const DAY_MS = 86_400_000;

interface Cutoffs {
  credentials: Date;
  events: Date;
  mail: Date;
  audit: Date;
}

/**
 * One table's rule: a statement that deletes at most BATCH_ROWS rows that may go. Rows another transaction has locked
 * (a token being redeemed this moment) are skipped, not waited for; they go with a later batch. Each rule's
 * condition is served by an index, so a batch reads what it deletes and not the table.
 */
interface Sweep {
  table: string;
  batch: (cutoffs: Cutoffs) => Prisma.Sql;
}

/** Deletes, from `table`, up to a batch of the rows `where` selects. */
const batchOf = (table: string, where: Prisma.Sql): Prisma.Sql => Prisma.sql`
  delete from ${Prisma.raw(table)} where ctid = any(array(
    select ctid from ${Prisma.raw(table)} where ${where} limit ${BATCH_ROWS} for update skip locked))`;

const expired = (table: string, column = 'expires_at'): Sweep => ({
  table,
  batch: ({ credentials }) => batchOf(table, Prisma.sql`${Prisma.raw(column)} < ${credentials}`),
});

const SWEEPS: Sweep[] = [
  expired('sessions'),
  expired('authorization_codes'),
  expired('device_authorizations'),
  expired('refresh_tokens'),
  expired('login_throttles', 'window_start'),
  expired('oauth_consent_answers'),
  expired('link_tokens'),
  expired('webauthn_challenges'),
  expired('sso_requests'),
  // An assertion past its NotOnOrAfter is refused for its time anyway: its id need not be kept to refuse a replay.
  expired('saml_assertions'),
  // History. A delivery still pending is left to its retries, and so is its event, however old; the attempts of a
  // delivery go before it, and an event once no delivery is left of it.
  {
    table: 'webhook_attempts',
    batch: ({ events }) =>
      batchOf(
        'webhook_attempts',
        Prisma.sql`delivery_id in (
          select id from webhook_deliveries where created_at < ${events} and status <> 'pending')`,
      ),
  },
  {
    table: 'webhook_deliveries',
    batch: ({ events }) =>
      batchOf(
        'webhook_deliveries',
        Prisma.sql`created_at < ${events} and status <> 'pending'
          and not exists (select from webhook_attempts a where a.delivery_id = webhook_deliveries.id)`,
      ),
  },
  {
    table: 'events',
    batch: ({ events }) =>
      batchOf(
        'events',
        Prisma.sql`created_at < ${events}
          and not exists (select from webhook_deliveries d where d.event_id = events.id)`,
      ),
  },
  // A mail still queued or retrying is left to its job, however old.
  {
    table: 'mails',
    batch: ({ mail }) => batchOf('mails', Prisma.sql`created_at < ${mail} and status in ('sent', 'mailbox', 'failed')`),
  },
  { table: 'audit_logs', batch: ({ audit }) => batchOf('audit_logs', Prisma.sql`created_at < ${audit}`) },
  {
    table: 'scim_requests',
    batch: () =>
      batchOf(
        'scim_requests',
        Prisma.sql`id in (
          select id from (
            select id, row_number() over (partition by organization_id order by id desc) as n from scim_requests
          ) ranked where n > ${SCIM_REQUESTS_KEPT})`,
      ),
  },
];

const pause = () => new Promise((resolve) => setTimeout(resolve, PAUSE_MS));

/** Deletes what may go from every table, a batch at a time, and says how many rows left each table. */
export async function deleteExpired(
  db: Db,
  now: Date,
  retention: Retention = DEFAULT_RETENTION,
): Promise<Record<string, number>> {
  const ago = (days: number) => new Date(now.getTime() - days * DAY_MS);
  const cutoffs: Cutoffs = {
    credentials: ago(GRACE_DAYS),
    events: ago(retention.events),
    mail: ago(retention.mail),
    audit: ago(retention.audit),
  };
  const deleted: Record<string, number> = {};
  for (const sweep of SWEEPS) {
    let total = 0;
    for (;;) {
      const n = await db.$executeRaw(sweep.batch(cutoffs));
      total += n;
      if (n < BATCH_ROWS) break;
      await pause();
    }
    if (total) deleted[sweep.table] = total;
  }
  return deleted;
}
