// Bounded storage (docs/architecture.md#bounded-storage): the hourly cleanup deletes history past its retention
// (events with their deliveries and attempts, mail, the audit log), each retention set by the environment, in
// statements of at most 5,000 rows, passing over rows another transaction holds instead of waiting for them.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { movableClock } from '../helpers/clock.ts';
import { runTaskNow } from '../helpers/worker.ts';
import { loadConfig } from '../../server/config.ts';
import { BATCH_ROWS, DEFAULT_RETENTION, deleteExpired } from '../../schema/maintenance/cleanup.ts';

const clock = movableClock();
let server: TestServer;
let sql: pg.Client;

/** The retention this file's service runs with: not the defaults, so that the test sees the environment obeyed. */
const RETENTION = { EVENT_RETENTION_DAYS: '3', MAIL_RETENTION_DAYS: '5', AUDIT_RETENTION_DAYS: '90' };

beforeAll(async () => {
  server = await startTestServer({ clock, role: 'all', env: RETENTION });
  sql = new pg.Client({ connectionString: server.databaseUrl });
  await sql.connect();
});
afterAll(async () => {
  await sql?.end();
  await server?.stop();
});

const DAY_MS = 86_400_000;
const daysAgo = (days: number) => new Date(clock.now().getTime() - days * DAY_MS);

/** An event with one delivery of `status` and `attempts` attempts, made `age` days ago; its ids. */
async function eventWithDelivery(age: number, status: string | null, attempts = 2) {
  const at = daysAgo(age);
  const webhook = await webhookId();
  const event = crypto.randomUUID();
  await sql.query(
    `insert into events (id, kind, organization_id, body, created_at) values ($1, 'user.created', $2, '{}', $3)`,
    [event, organizationId, at],
  );
  if (status === null) return { event, delivery: null };
  const delivery = crypto.randomUUID();
  await sql.query(
    `insert into webhook_deliveries (id, webhook_id, event_id, kind, status, attempts, created_at, updated_at)
     values ($1, $2, $3, 'user.created', $4, $5, $6, $6)`,
    [delivery, webhook, event, status, attempts, at],
  );
  for (let n = 1; n <= attempts; n++) {
    await sql.query(
      `insert into webhook_attempts (id, delivery_id, attempt, started_at, duration_ms, success, request_headers)
       values ($1, $2, $3, $4, 10, false, '{}')`,
      [crypto.randomUUID(), delivery, n, at],
    );
  }
  return { event, delivery };
}

let organizationId: string;
let webhook: string | undefined;
async function webhookId(): Promise<string> {
  if (webhook) return webhook;
  webhook = crypto.randomUUID();
  const now = clock.now();
  await sql.query(
    `insert into webhooks (id, organization_id, url, secret_encrypted, events, is_active, created_at, updated_at)
     values ($1, $2, 'https://hooks.example.test/in', 'sealed', '{}', false, $3, $3)`,
    [webhook, organizationId, now],
  );
  return webhook;
}

async function exists(table: string, id: string): Promise<boolean> {
  const { rowCount } = await sql.query(`select 1 from ${table} where id = $1`, [id]);
  return rowCount === 1;
}

describe('the cleanup keeps history for its retention', () => {
  beforeAll(async () => {
    const {
      rows: [org],
    } = await sql.query<{ id: string }>('select id from organizations limit 1');
    organizationId = org!.id;
  });

  it('reads each retention from the environment, with the defaults 14, 30 and 365 days', async () => {
    const defaults = await loadConfig({ SECRET_KEY: 'a'.repeat(64) });
    expect(defaults.retention).toEqual({ events: 14, mail: 30, audit: 365 });
    expect(DEFAULT_RETENTION).toEqual(defaults.retention);
    const set = await loadConfig({ SECRET_KEY: 'a'.repeat(64), ...RETENTION });
    expect(set.retention).toEqual({ events: 3, mail: 5, audit: 90 });
    for (const bad of ['0', '-1', '2.5', 'a week', '36501']) {
      await expect(loadConfig({ SECRET_KEY: 'a'.repeat(64), AUDIT_RETENTION_DAYS: bad })).rejects.toThrow(
        /AUDIT_RETENTION_DAYS: .*(number|days|36500|>=)/,
      );
    }
  });

  it('deletes events, deliveries and attempts past EVENT_RETENTION_DAYS, mail past MAIL_RETENTION_DAYS and audit entries past AUDIT_RETENTION_DAYS, and keeps the rest', async () => {
    const delivered = await eventWithDelivery(4, 'delivered');
    const failed = await eventWithDelivery(4, 'failed', 3);
    const alone = await eventWithDelivery(4, null);
    const stillRetrying = await eventWithDelivery(20, 'pending');
    const recent = await eventWithDelivery(2, 'delivered');

    const mail = async (age: number, status: string) => {
      const id = crypto.randomUUID();
      await sql.query(
        `insert into mails (id, kind, to_address, subject, status, created_at, updated_at)
         values ($1, 'verify', 'someone@example.test', 'Hello', $2, $3, $3)`,
        [id, status, daysAgo(age)],
      );
      return id;
    };
    const oldSent = await mail(6, 'sent');
    const oldQueued = await mail(6, 'queued');
    const recentSent = await mail(4, 'mailbox');

    const audit = async (age: number) => {
      const id = crypto.randomUUID();
      await sql.query(
        `insert into audit_logs (id, organization_id, actor_type, action, outcome, created_at)
         values ($1, $2, 'system', 'user.login', 'success', $3)`,
        [id, organizationId, daysAgo(age)],
      );
      return id;
    };
    const oldAudit = await audit(91);
    const recentAudit = await audit(89);

    await runTaskNow(server.databaseUrl, 'cleanup');

    for (const gone of [delivered, failed, alone]) {
      expect(await exists('events', gone.event)).toBe(false);
      if (gone.delivery) expect(await exists('webhook_deliveries', gone.delivery)).toBe(false);
    }
    const { rows: attemptsLeft } = await sql.query<{ delivery_id: string }>('select delivery_id from webhook_attempts');
    expect(new Set(attemptsLeft.map((a) => a.delivery_id))).toEqual(new Set([stillRetrying.delivery, recent.delivery]));
    for (const kept of [stillRetrying, recent]) {
      expect(await exists('events', kept.event)).toBe(true);
      expect(await exists('webhook_deliveries', kept.delivery!)).toBe(true);
    }
    expect(await exists('mails', oldSent)).toBe(false);
    expect(await exists('mails', oldQueued)).toBe(true);
    expect(await exists('mails', recentSent)).toBe(true);
    expect(await exists('audit_logs', oldAudit)).toBe(false);
    expect(await exists('audit_logs', recentAudit)).toBe(true);
  });
});

describe('the cleanup deletes a backlog', () => {
  /** Sign-in throttles a month old, `n` of them, written as one statement. */
  const seedThrottles = (n: number, prefix: string) =>
    sql.query(
      `insert into login_throttles (key, failures, window_start)
       select $1 || i, 1, $2 from generate_series(1, $3::int) i`,
      [prefix, daysAgo(30), n],
    );

  it('in statements of at most 5,000 rows', async () => {
    // Every DELETE statement on the table records how many rows it took.
    await sql.query(`
      create table deletes_seen (rows bigint not null);
      create function count_deleted() returns trigger language plpgsql as $$
        begin insert into deletes_seen select count(*) from gone; return null; end $$;
      create trigger count_deleted after delete on login_throttles
        referencing old table as gone for each statement execute function count_deleted();`);
    const n = 2 * BATCH_ROWS + 17;
    await seedThrottles(n, 'backlog:');

    const deleted = await deleteExpired(server.base.db, clock.now());

    expect(deleted.login_throttles).toBe(n);
    const { rows } = await sql.query<{ rows: string }>('select rows from deletes_seen');
    expect(rows.map((r) => Number(r.rows))).toEqual([BATCH_ROWS, BATCH_ROWS, 17]);
    const { rows: left } = await sql.query<{ n: string }>(
      `select count(*) as n from login_throttles where key like 'backlog:%'`,
    );
    expect(Number(left[0]!.n)).toBe(0);
    await sql.query('drop trigger count_deleted on login_throttles; drop table deletes_seen');
  });

  it('passes over a row that another transaction holds, instead of waiting for it, and takes it next time', async () => {
    await seedThrottles(3, 'held:');
    const holder = new pg.Client({ connectionString: server.databaseUrl });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query(`select * from login_throttles where key = 'held:2' for update`);

      const deleted = await deleteExpired(server.base.db, clock.now());

      expect(deleted.login_throttles).toBe(2);
      const { rows } = await sql.query<{ key: string }>(`select key from login_throttles where key like 'held:%'`);
      expect(rows.map((r) => r.key)).toEqual(['held:2']);
      await holder.query('commit');
    } finally {
      await holder.end();
    }
    expect((await deleteExpired(server.base.db, clock.now())).login_throttles).toBe(1);
  });
});
