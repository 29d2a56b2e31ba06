// Every change, and every failed sign-in or client authentication, leaves an audit entry. An entry belongs to one
// organization, whose admins see it; an entry with no organization is a platform event (an attempt on an
// unknown e-mail or on an account no organization manages, a client id that does not exist), seen by platform
// admins only.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isPlatformAdmin, organizationInScope, requireOrgRole } from '../../auth/access.ts';
import { managerOf } from '../../auth/managed.ts';
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';

export interface AuditEntry {
  action: string;
  organizationId?: string | null;
  targetType?: string;
  targetId?: string;
  outcome?: 'success' | 'failure';
  details?: Record<string, unknown>;
  /** Who acted, when it is not the request's actor (a sign-in before a session exists). */
  actorId?: string | null;
}

type Tx = Pick<Prisma.TransactionClient, 'auditLog'>;

function actorOf(ctx: Context): { type: string; id: string | null } {
  const a = ctx.actor;
  if (!a) return { type: 'anonymous', id: null };
  if (a.kind === 'apiKey') return { type: 'api_key', id: a.apiKeyId };
  if (a.kind === 'oauth') return a.userId ? { type: 'user', id: a.userId } : { type: 'oauth_client', id: a.clientId };
  return { type: 'user', id: a.userId };
}

// Keys that name a credential. Details never hold one on purpose; this keeps a slip from reaching the log.
const SECRET_KEY = /secret|password|passwd|hash|(^|_)(token|code|code_verifier|api_key)$|Token$/i;

/** The details with anything that looks like a credential left out, at any depth. */
export function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => !SECRET_KEY.test(k))
      .map(([k, v]) => [k, withoutSecrets(v)]),
  );
}

const userAgentOf = (ctx: Context) => ctx.request.userAgent?.slice(0, 500) ?? null;

function row(ctx: Context, entry: AuditEntry): Prisma.AuditLogCreateManyInput {
  const actor = actorOf(ctx);
  return {
    action: entry.action,
    organizationId: entry.organizationId ?? (ctx.actor?.organizationId || null),
    actorType: entry.actorId !== undefined ? (entry.actorId ? 'user' : 'anonymous') : actor.type,
    actorId: entry.actorId !== undefined ? entry.actorId : actor.id,
    targetType: entry.targetType ?? null,
    targetId: entry.targetId ?? null,
    outcome: entry.outcome ?? 'success',
    ip: ctx.request.ip,
    userAgent: userAgentOf(ctx),
    details: withoutSecrets(entry.details ?? {}) as Prisma.InputJsonValue,
  };
}

export async function recordAudit(ctx: Context, entry: AuditEntry, tx: Tx = ctx.db): Promise<void> {
  await tx.auditLog.create({ data: row(ctx, entry) });
}

interface Account {
  id: string;
  /** The organization that manages the account, whose admins see attempts on it; null: the platform's only. */
  home: string | null;
}

/**
 * An attempt on an account is about the person, not about any one membership: it is seen where the account is
 * managed (docs/architecture.md#managed-accounts) and by platform admins, never by every organization the person
 * joined, since anyone can make one and invite them.
 */
async function accountOf(ctx: Context, email: string): Promise<Account | null> {
  const [user, home] = await Promise.all([
    ctx.db.user.findUnique({ where: { email }, select: { id: true } }),
    managerOf(ctx.db, email),
  ]);
  return user ? { id: user.id, home } : null;
}

/**
 * A failed attempt to prove an account's password, written to the organization that manages the account, else as a
 * platform event (as is an unknown e-mail). The entry names the e-mail tried; the address and user agent come with
 * every entry. Written in one statement, outside any transaction.
 */
export async function recordFailedPasswordAttempt(
  ctx: Context,
  email: string,
  entry: { action: string; reason: string },
): Promise<void> {
  const account = await accountOf(ctx, email);
  await ctx.db.auditLog.create({
    data: row(ctx, {
      action: entry.action,
      outcome: 'failure',
      organizationId: account?.home ?? null,
      actorId: account?.id ?? null,
      ...(account ? { targetType: 'user', targetId: account.id } : {}),
      details: { email, reason: account ? entry.reason : 'unknown_email' },
    }),
  });
}

/** A lock of the sign-in throttle: which counter locked, from when until when. */
export interface ThrottleLock {
  key: string;
  since: Date;
  until: Date;
}

export const THROTTLED_ACTION = 'auth.login.throttled';

/**
 * A UUIDv7 that is the same for every refused attempt on one account, in one organization, during one lock: its
 * time is the lock's start (so it sorts where the lock began), the rest a hash of what it aggregates.
 */
function aggregateId(lock: ThrottleLock, email: string, organizationId: string | null): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([THROTTLED_ACTION, organizationId, email, lock.key, lock.since.toISOString()]))
    .digest();
  return uuidv7(lock.since.getTime(), digest.subarray(0, 16));
}

/**
 * An attempt refused by the sign-in throttle (429), seen where a failed attempt is (accountOf). Under attack these
 * come by the thousand, so they are aggregated rather than written one by one: one entry per account and lock,
 * whose `count` each refusal increments in a single upsert (concurrent refusals cannot create two). Address and
 * user agent are the first attempt's; `last_at` the latest's.
 */
export async function countThrottledAttempt(ctx: Context, email: string, lock: ThrottleLock): Promise<void> {
  const account = await accountOf(ctx, email);
  const home = account?.home ?? null;
  const now = ctx.clock.now();
  const details = {
    email,
    reason: lock.key.startsWith('address:') ? 'address_locked' : 'account_locked',
    count: 1,
    locked_until: lock.until.toISOString(),
    last_at: now.toISOString(),
  };
  await ctx.db.$executeRaw`
    insert into audit_logs (id, organization_id, actor_type, actor_id, action, target_type, target_id, outcome, ip, user_agent, details, created_at)
    values (${aggregateId(lock, email, home)}, ${home}, ${account ? 'user' : 'anonymous'}, ${account?.id ?? null}, ${THROTTLED_ACTION},
           ${account ? 'user' : null}, ${account?.id ?? null}, 'failure'::"AuditOutcome", ${ctx.request.ip}, ${userAgentOf(ctx)},
           ${JSON.stringify(details)}::jsonb, ${now}::timestamp)
    on conflict (id) do update set details = audit_logs.details
      || jsonb_build_object('count', coalesce((audit_logs.details->>'count')::int, 1) + 1, 'last_at', excluded.details->'last_at')`;
}

// ---- reading the trail -----------------------------------------------------------------------------------------

const text = (max: number) => z.string().trim().min(1, 'must not be empty').max(max).nullish();

const filterInput = z
  .object({
    organizationId: text(100),
    actor: text(254),
    action: text(100),
    targetType: text(100),
    targetId: text(200),
    outcome: z.enum(['success', 'failure'], { message: 'must be success or failure' }).nullish(),
    // A date is that whole day in UTC (the interface's); a date-time needs its zone (lib/input.ts).
    from: fields.timestampOrDay.nullish(),
    to: fields.timestampOrDay.nullish(),
  })
  .refine((f) => !f.from || !f.to || f.from.date <= f.to.date, { path: ['to'], message: 'must not be before from' });

/** As the caller sent it: checked here, so that REST and GraphQL get the same field problems. */
export type AuditFilter = { [K in keyof z.input<typeof filterInput>]?: string | null };

/**
 * Whose entries the caller may read: a named organization needs its admins (platform admins for any); without
 * one, platform admins read every organization's and the platform events, anyone else their current one's.
 */
async function visibleScope(
  ctx: Context,
  organizationId: string | null | undefined,
): Promise<Prisma.AuditLogWhereInput> {
  if (organizationId) {
    await requireOrgRole(ctx, organizationId, 'admin');
    return { organizationId };
  }
  if (await isPlatformAdmin(ctx)) return {};
  const acting = organizationInScope(ctx);
  await requireOrgRole(ctx, acting, 'admin');
  return { organizationId: acting };
}

async function filterWhere(ctx: Context, f: z.output<typeof filterInput>): Promise<Prisma.AuditLogWhereInput[]> {
  const where: Prisma.AuditLogWhereInput[] = [];
  if (f.actor) {
    // An e-mail finds the person's entries, and the attempts made on that e-mail (failed sign-ins of anyone).
    if (f.actor.includes('@')) {
      const email = f.actor.toLowerCase();
      const user = await ctx.db.user.findUnique({ where: { email }, select: { id: true } });
      where.push({ OR: [...(user ? [{ actorId: user.id }] : []), { details: { path: ['email'], equals: email } }] });
    } else {
      where.push({ actorId: f.actor });
    }
  }
  // `auth.*` or `auth.login*`: every action that starts so.
  if (f.action) where.push({ action: f.action.endsWith('*') ? { startsWith: f.action.slice(0, -1) } : f.action });
  if (f.targetType) where.push({ targetType: f.targetType });
  if (f.targetId) where.push({ targetId: f.targetId });
  if (f.outcome) where.push({ outcome: f.outcome });
  if (f.from) where.push({ createdAt: { gte: f.from.date } });
  // A date as `to` includes that whole day.
  if (f.to)
    where.push({ createdAt: { lt: f.to.dateOnly ? new Date(f.to.date.getTime() + 24 * 3600 * 1000) : f.to.date } });
  return where;
}

export interface AuditActor {
  type: string;
  id: string | null;
  /** A person's name, an API key's or an OAuth client's; null when it is gone. */
  name: string | null;
  email: string | null;
}

/** Names the actors of a page in at most three queries (people, API keys, OAuth clients). */
async function actorsOf(
  ctx: Context,
  rows: { actorType: string; actorId: string | null }[],
): Promise<Map<string, AuditActor>> {
  const ids = (type: string) => [
    ...new Set(rows.flatMap((r) => (r.actorType === type && r.actorId ? [r.actorId] : []))),
  ];
  const [users, keys, clients] = await Promise.all([
    ids('user').length
      ? ctx.db.user.findMany({ where: { id: { in: ids('user') } }, select: { id: true, name: true, email: true } })
      : [],
    ids('api_key').length
      ? ctx.db.apiKey.findMany({ where: { id: { in: ids('api_key') } }, select: { id: true, name: true } })
      : [],
    ids('oauth_client').length
      ? ctx.db.oAuthClient.findMany({ where: { id: { in: ids('oauth_client') } }, select: { id: true, name: true } })
      : [],
  ]);
  const named = new Map<string, AuditActor>();
  for (const u of users) named.set(`user:${u.id}`, { type: 'user', id: u.id, name: u.name, email: u.email });
  for (const k of keys) named.set(`api_key:${k.id}`, { type: 'api_key', id: k.id, name: k.name, email: null });
  for (const c of clients)
    named.set(`oauth_client:${c.id}`, { type: 'oauth_client', id: c.id, name: c.name, email: null });
  return named;
}

/** The names of the organizations a page's entries belong to, in one query. */
async function organizationNames(
  ctx: Context,
  rows: { organizationId: string | null }[],
): Promise<Map<string, string>> {
  const ids = [...new Set(rows.map((r) => r.organizationId).filter((id): id is string => !!id))];
  const orgs = ids.length
    ? await ctx.db.organization.findMany({ where: { id: { in: ids } }, select: { id: true, name: true } })
    : [];
  return new Map(orgs.map((o) => [o.id, o.name]));
}

/** One page of the audit trail, newest first, with each actor and organization named. Entries never carry secrets. */
export async function listAuditLogs(ctx: Context, input: AuditFilter & PageInput) {
  const { limit: pageLimit, cursor, ...filters } = input;
  const f = parseInput(filterInput, filters);
  const scope = await visibleScope(ctx, f.organizationId);
  const { limit, args } = paged(
    { limit: pageLimit, cursor },
    { AND: [scope, ...(await filterWhere(ctx, f))] },
    { newestFirst: true },
  );
  const page = toPage(await ctx.db.auditLog.findMany(args), limit);
  const [actors, organizations] = await Promise.all([actorsOf(ctx, page.items), organizationNames(ctx, page.items)]);
  return {
    ...page,
    items: page.items.map((e) => ({
      ...e,
      organization: e.organizationId
        ? { id: e.organizationId, name: organizations.get(e.organizationId) ?? null }
        : null,
      details: withoutSecrets(e.details),
      actor: actors.get(`${e.actorType}:${e.actorId}`) ?? { type: e.actorType, id: e.actorId, name: null, email: null },
    })),
  };
}

export type AuditLogEntry = Awaited<ReturnType<typeof listAuditLogs>>['items'][number];
