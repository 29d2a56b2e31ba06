// The data of `npm run bench:scale` (docs/architecture.md#bounded-storage, "Cost as data grows"): a database of
// `users` accounts with everything that grows beside them, made by SQL alone (generate_series), so that 10 million
// users take minutes, not the hours that the service's own paths would.
//
// Every id is a UUIDv7 (time first, as the service's own are), made from its row's number and time, so that a table
// can name a row of another by its number without a join: user i is uid(i) wherever it is referred to.
//
// The secondary indexes of each table are dropped before it is filled and built again after (one sort instead of
// millions of inserts into each), foreign keys and triggers are not fired (session_replication_role = replica: every
// reference is made valid by construction), and VACUUM ANALYZE leaves the tables as a database in service is: planned
// from statistics, with its visibility map set.
import type pg from 'pg';

/** How much of everything there is for `users` accounts: the proportions of a SaaS product in steady use. */
export interface ScaleShape {
  users: number;
  /** Ordinary organizations, of 100 members each. */
  organizations: number;
  /** Members of the one large organization (its owner apart), which the list pages and SCIM are measured on. */
  bigMembers: number;
  /** Members of the large organization's one SCIM group. */
  groupMembers: number;
  clients: number;
  /** Live sessions: one for every other account. */
  sessions: number;
  /** One grant an account; `refreshPerGrant` refresh tokens each, all but the last used (rotated). */
  refreshTokens: number;
  refreshPerGrant: number;
  auditEntries: number;
  /** Of those, the large organization's (at most a million: the CSV export's size). */
  bigAuditEntries: number;
  /** Events, one delivery each, and one attempt each. */
  events: number;
  /** Of those, the deliveries of the large organization's webhook. */
  bigDeliveries: number;
  webhooks: number;
}

export function scaleShape(
  users: number,
  { refreshPerGrant = 5, auditPerUser = 10 }: { refreshPerGrant?: number; auditPerUser?: number } = {},
): ScaleShape {
  const organizations = Math.max(1, Math.ceil(users / 100));
  const bigMembers = Math.min(50_000, Math.floor(users / 2));
  const auditEntries = users * auditPerUser;
  const events = Math.floor(users / 2);
  return {
    users,
    organizations,
    bigMembers,
    groupMembers: Math.min(10_000, bigMembers),
    clients: Math.max(1, Math.ceil(organizations / 100)),
    sessions: Math.floor(users / 2),
    refreshTokens: users * refreshPerGrant,
    refreshPerGrant,
    auditEntries,
    bigAuditEntries: Math.min(1_000_000, Math.floor(auditEntries / 10)),
    events,
    bigDeliveries: Math.min(1_000_000, Math.floor(events / 10)),
    webhooks: Math.ceil(organizations / 10),
  };
}

/** Bumped when the seed changes, so that a database seeded by an older one is seeded again. */
export const SEED_VERSION = 3;

/** The accounts' one password (every seeded account has it), the large organization and its owner. */
export const SCALE_PASSWORD = 'scale password 123';
export const BIG_OWNER_EMAIL = 'owner@big.scale.test';
export const memberEmail = (i: number, organizations: number) => `u${i}@o${organization(i, organizations)}.scale.test`;
const organization = (i: number, organizations: number) => ((i - 1) % organizations) + 1;

export interface SeedStep {
  table: string;
  rows: number;
  sql: string;
}

/**
 * The statements that fill an empty, migrated database. `anchor` is the seed's "now": rows are spread back from it
 * over the period their retention keeps (refresh tokens 30 days, events 14, the audit log 365, accounts two years).
 */
export function seedSteps(s: ScaleShape, passwordHash: string, anchor: Date): SeedStep[] {
  const at = `'${anchor.toISOString()}'::timestamptz`;
  const O = s.organizations;
  // The expressions below are written into each statement, not called as SQL functions: PostgreSQL does not inline
  // a function called from a FROM list or with a default, and calling one costs several times the expression.
  /** Row `n` of kind `kind` (the 3 hex digits after the version; the row's number is the last 15), made at `t`. */
  const sid = (kind: number, n: string, t = at) =>
    `(lpad(to_hex((extract(epoch from ${t}) * 1000)::bigint), 12, '0') || '7${kind.toString(16).padStart(3, '0')}8' || lpad(to_hex(${n}), 15, '0'))::uuid::text`;
  /** When row n of `total` was made, spread evenly over `span` before the anchor. */
  const made = (n: string, total: number, span: string) =>
    `(${at} - interval '${span}' + interval '${span}' * ((${n})::float8 / ${Math.max(total, 1)}))`;
  const uid = (i: string) => sid(1, i, made(i, s.users, '730 days'));
  const oid = (j: string) => sid(2, j, made(j, O, '730 days'));
  const orgOf = (i: string) => `((${i} - 1) % ${O} + 1)`;
  const cid = (k: string) => sid(4, k);
  const gid = (i: string) => sid(5, i, made(i, s.users, '730 days'));
  const wid = (w: string) => sid(6, w);
  // Webhook w (from 1) belongs to organization 10(w - 1) + 1; webhook 0 to the large organization.
  const hookOrg = (w: string) => `case when ${w} = 0 then ${oid('0')} else ${oid(`10 * (${w} - 1) + 1`)} end`;
  const eid = (n: string) => sid(7, n, made(n, s.events, '14 days'));
  const scimUid = (i: string) => sid(8, i);
  // Which events are the large organization's: an even share through time, not a block.
  const bigEvent = `(n % 1000) < ${Math.round((1000 * s.bigDeliveries) / Math.max(1, s.events))}`;
  const bigAudit = `(n % 1000) < ${Math.round((1000 * s.bigAuditEntries) / Math.max(1, s.auditEntries))}`;
  // Event n's webhook: the large organization's (0) for its share, else one of the others.
  const bigHook = `case when ${bigEvent} then 0 else n % ${s.webhooks} + 1 end`;
  const steps: SeedStep[] = [
    {
      table: 'organizations',
      rows: O + 1,
      sql: `insert into organizations (id, name, created_at, updated_at)
        select ${oid('j')}, case when j = 0 then 'Scale large organization' else 'Scale organization ' || j end, t, t
        from generate_series(0::bigint, ${O}) j, lateral (select ${made('j', O, '730 days')} as t) m`,
    },
    {
      table: 'users',
      rows: s.users + 1,
      sql: `insert into users (id, email, email_verified, name, password_hash, created_at, updated_at)
        select ${uid('i')}, case when i = 0 then '${BIG_OWNER_EMAIL}' else 'u' || i || '@o' || ${orgOf('i')} || '.scale.test' end,
               true, 'User ' || i, '${passwordHash}', t, t
        from generate_series(0::bigint, ${s.users}) i, lateral (select ${made('i', s.users, '730 days')} as t) m`,
    },
    {
      table: 'memberships',
      rows: s.users + s.bigMembers + 1,
      // Everyone in their organization (its first member its owner), the first bigMembers in the large one too, whose
      // owner (user 0) belongs to it alone.
      sql: `insert into memberships (id, user_id, organization_id, role, created_at)
        select ${sid(3, 'i')}, ${uid('i')}, ${oid(orgOf('i'))},
               (case when i <= ${O} then 'owner' else 'member' end)::"Role", ${made('i', s.users, '730 days')}
        from generate_series(1::bigint, ${s.users}) i
        union all
        select ${sid(3, `${s.users} + i + 1`)}, ${uid('i')}, ${oid('0')},
               (case when i = 0 then 'owner' else 'member' end)::"Role", ${made('i', s.users, '730 days')}
        from generate_series(0::bigint, ${s.bigMembers}) i`,
    },
    {
      table: 'oauth_clients',
      rows: s.clients,
      sql: `insert into oauth_clients (id, client_id, secret_hash, organization_id, name, redirect_uris, allowed_scopes, created_at, updated_at)
        select ${cid('k')}, 'scale-client-' || k, encode(sha256(('client' || k)::bytea), 'hex'),
               ${oid('100 * (k - 1) + 1')}, 'Scale client ' || k, '{https://app.scale.test/cb}', '{openid,email,profile}',
               ${at} - interval '730 days', ${at} - interval '730 days'
        from generate_series(1::bigint, ${s.clients}) k`,
    },
    {
      table: 'sessions',
      rows: s.sessions,
      sql: `insert into sessions (id, user_id, token_hash, organization_id, session_version, auth_time, created_at, expires_at, last_seen_at)
        select ${sid(9, 'n', 't')}, ${uid('2 * n')}, encode(sha256(('session' || n)::bytea), 'hex'),
               ${oid(orgOf('2 * n'))}, 1, t, t, t + interval '30 days', t
        from generate_series(1::bigint, ${s.sessions}) n, lateral (select ${made('n', s.sessions, '30 days')} as t) m`,
    },
    {
      table: 'oauth_grants',
      rows: s.users,
      sql: `insert into oauth_grants (id, client_id, user_id, scope, created_at)
        select ${gid('i')}, ${cid(`(i - 1) % ${s.clients} + 1`)}, ${uid('i')}, 'openid email', ${made('i', s.users, '730 days')}
        from generate_series(1::bigint, ${s.users}) i`,
    },
    {
      table: 'refresh_tokens',
      rows: s.refreshTokens,
      // Token n is of grant (n - 1) % users + 1, the (n - 1) / users-th of its chain: all but the last are used.
      sql: `insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, organization_id, scope, auth_time,
                                        amr, session_version, expires_at, used_at, created_at)
        select ${sid(10, 'n', 't')}, encode(sha256(('refresh' || n)::bytea), 'hex'), ${gid('i')},
               ${cid(`(i - 1) % ${s.clients} + 1`)}, ${uid('i')}, ${oid(orgOf('i'))},
               'openid email', t, '{pwd}', 1, t + interval '30 days',
               case when (n - 1) / ${s.users} < ${s.refreshPerGrant - 1} then t + interval '1 hour' end, t
        from generate_series(1::bigint, ${s.refreshTokens}) n,
             lateral (select (n - 1) % ${s.users} + 1 as i, ${made('n', s.refreshTokens, '30 days')} as t) g`,
    },
    {
      table: 'audit_logs',
      rows: s.auditEntries,
      sql: `insert into audit_logs (id, organization_id, actor_type, actor_id, action, target_type, target_id, outcome,
                                    ip, user_agent, details, created_at)
        select ${sid(11, 'n', 't')}, case when ${bigAudit} then ${oid('0')} else ${oid(orgOf('u'))} end,
               'user', actor, (array['auth.login', 'auth.logout', 'token.issued', 'member.added', 'api_key.created',
                      'subscription.updated', 'oauth_client.updated', 'auth.login.failed'])[n % 8 + 1],
               'user', actor, (case when n % 20 = 0 then 'failure' else 'success' end)::"AuditOutcome",
               '203.0.113.' || (n % 250), 'scale-seed/1.0', '{}', t
        from generate_series(1::bigint, ${s.auditEntries}) n,
             lateral (select (n * 7919) % ${s.users} + 1 as u, ${made('n', s.auditEntries, '365 days')} as t) a,
             lateral (select ${uid('u')} as actor offset 0) b`,
    },
    {
      table: 'webhooks',
      rows: s.webhooks + 1,
      sql: `insert into webhooks (id, organization_id, url, events, secret_encrypted, created_at, updated_at)
        select ${wid('w')}, ${hookOrg('w')}, 'https://hooks.scale.test/' || w, '{member.added}', 'unused',
               ${at} - interval '365 days', ${at} - interval '365 days'
        from generate_series(0::bigint, ${s.webhooks}) w`,
    },
    {
      table: 'events',
      rows: s.events,
      sql: `insert into events (id, kind, organization_id, body, created_at)
        select ${eid('n')}, 'member.added', ${hookOrg('w')}, '{"type":"member.added","n":' || n || '}',
               ${made('n', s.events, '14 days')}
        from generate_series(1::bigint, ${s.events}) n, lateral (select ${bigHook} as w) h`,
    },
    {
      table: 'webhook_deliveries',
      rows: s.events,
      sql: `insert into webhook_deliveries (id, webhook_id, event_id, kind, status, attempts, last_status_code,
                                            delivered_at, created_at, updated_at)
        select ${sid(12, 'n', 't')}, ${wid(bigHook)}, ${eid('n')}, 'member.added', 'delivered', 1, 200,
               t + interval '1 second', t, t + interval '1 second'
        from generate_series(1::bigint, ${s.events}) n, lateral (select ${made('n', s.events, '14 days')} as t) m`,
    },
    {
      table: 'webhook_attempts',
      rows: s.events,
      sql: `insert into webhook_attempts (id, delivery_id, attempt, started_at, duration_ms, success, status_code,
                                          request_headers, response_body)
        select ${sid(13, 'n', 't')}, ${sid(12, 'n', 't')}, 1, t, 40, true, 200, '{}', 'ok'
        from generate_series(1::bigint, ${s.events}) n, lateral (select ${made('n', s.events, '14 days')} as t) m`,
    },
    {
      table: 'scim_users',
      rows: s.bigMembers,
      sql: `insert into scim_users (id, organization_id, user_id, user_name, external_id, email, created_at, updated_at)
        select ${scimUid('i')}, ${oid('0')}, ${uid('i')}, e, 'ext-' || i, e, ${at}, ${at}
        from generate_series(1::bigint, ${s.bigMembers}) i, lateral (select 'u' || i || '@o' || ${orgOf('i')} || '.scale.test' as e) m`,
    },
    {
      table: 'scim_groups',
      rows: 1,
      sql: `insert into scim_groups (id, organization_id, display_name, created_at, updated_at)
        values (${sid(14, '1')}, ${oid('0')}, 'Scale group', ${at}, ${at})`,
    },
    {
      table: 'scim_group_members',
      rows: s.groupMembers,
      sql: `insert into scim_group_members (group_id, scim_user_id)
        select ${sid(14, '1')}, ${scimUid('i')} from generate_series(1::bigint, ${s.groupMembers}) i`,
    },
  ];
  return steps;
}

/**
 * Fills the migrated, empty database `db` is connected to (as a superuser: session_replication_role). Each table's
 * indexes that no constraint depends on are dropped before it is filled and made again after, as they were.
 */
export async function seedScale(
  db: pg.Client,
  shape: ScaleShape,
  passwordHash: string,
  log: (line: string) => void = () => {},
): Promise<void> {
  const steps = seedSteps(shape, passwordHash, new Date());
  await db.query(`set session_replication_role = replica`);
  await db.query(`set synchronous_commit = off`);
  await db.query(`set maintenance_work_mem = '1GB'`);
  for (const step of steps) {
    const started = performance.now();
    const { rows: indexes } = await db.query<{ name: string; definition: string }>(
      `select c.relname as name, pg_get_indexdef(i.indexrelid) as definition
       from pg_index i join pg_class c on c.oid = i.indexrelid
       where i.indrelid = $1::regclass and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)`,
      [step.table],
    );
    for (const index of indexes) await db.query(`drop index "${index.name}"`);
    const { rowCount } = await db.query(step.sql);
    if (rowCount !== step.rows) throw new Error(`${step.table}: ${rowCount} rows seeded, ${step.rows} expected`);
    for (const index of indexes) await db.query(index.definition);
    await db.query(`vacuum analyze "${step.table}"`);
    log(
      `${step.table.padEnd(20)} ${String(step.rows).padStart(11)} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  }
  await db.query(`reset session_replication_role`);
}
