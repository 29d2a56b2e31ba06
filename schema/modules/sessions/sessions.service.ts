// Sessions: an opaque token (stored hashed) that works as a Bearer token and as the portal's cookie. Each
// carries the user's session version; bumping the version ends every session and token at once. Ending a session
// ends what came from it: the OAuth grants it authorized (docs/architecture.md#identity-sessions-and-tokens).
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { Prisma } from '../../db.ts';
import { addSeconds } from '../../lib/clock.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { emitUserEvent } from '../../events/emit.ts';
import { NotFoundError } from '../../errors/index.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { SessionRequiredError } from './sessions.errors.ts';

export const SESSION_TTL_SECONDS = 7 * 24 * 3600;
export const SESSION_TOKEN_PREFIX = 'tss_';

export interface IssuedSession {
  token: string;
  session: {
    id: string;
    createdAt: Date;
    expiresAt: Date;
    organizationId: string | null;
    authTime: Date;
    amr: string[];
  };
}

/**
 * How a sign-in proved who the person is, as RFC 8176 amr values: a password; a TOTP or recovery code; a passkey
 * (hwk bound to one device, swk synced) with user verification (user). A second factor, or a passkey with user
 * verification, adds mfa.
 */
export type AuthMethod = 'pwd' | 'otp' | 'hwk' | 'swk' | 'user' | 'mfa';

type Tx = Prisma.TransactionClient;

/** The organization a new session starts in: the operator organization for its admins, else the oldest membership. */
async function defaultOrganizationId(tx: Tx, userId: string): Promise<string | null> {
  const rows = await tx.membership.findMany({
    where: { userId },
    orderBy: { createdAt: 'asc' },
    select: { organizationId: true, role: true, organization: { select: { isOperator: true } } },
  });
  const operator = rows.find((r) => r.organization.isOperator && r.role !== 'member');
  return (operator ?? rows[0])?.organizationId ?? null;
}

/** How a new session was made: where it acts, and the sign-in it records (RFC 8176 amr, the connection). */
export interface SessionMaking {
  /** The organization it acts in; its default (defaultOrganizationId) when absent. */
  organizationId?: string | null;
  /** When the person last proved who they are: now, unless the session continues an earlier sign-in. */
  authTime?: Date;
  /** How they did: a password alone unless said. */
  amr?: AuthMethod[];
  /** The connection whose sign-in made it, or made the session it continues. */
  connectionId?: string | null;
}

export async function createSession(
  ctx: Context,
  tx: Tx,
  userId: string,
  sessionVersion: number,
  { organizationId, authTime, amr = ['pwd'], connectionId = null }: SessionMaking = {},
): Promise<IssuedSession> {
  const token = randomToken(SESSION_TOKEN_PREFIX);
  const now = ctx.clock.now();
  const session = await tx.session.create({
    data: {
      userId,
      tokenHash: sha256(token),
      sessionVersion,
      organizationId: organizationId === undefined ? await defaultOrganizationId(tx, userId) : organizationId,
      authTime: authTime ?? now,
      amr,
      connectionId,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: addSeconds(now, SESSION_TTL_SECONDS),
      ip: ctx.request.ip,
      userAgent: ctx.request.userAgent?.slice(0, 500) ?? null,
    },
  });
  await emitUserEvent(tx, 'session.created', userId, { session }, { at: now });
  return { token, session };
}

export interface LiveSession {
  id: string;
  userId: string;
  organizationId: string | null;
  sessionVersion: number;
  authTime: Date;
  createdAt: Date;
  expiresAt: Date;
}

/** A session's last use is written at most this often (docs/architecture.md#hot-paths). */
export const LAST_SEEN_GRANULARITY_SECONDS = 60;

/**
 * Finds the live session for a token, or null (unknown, revoked, expired, or older than the session version).
 * One statement: every authenticated request of a browser or a session token comes through here. The same
 * statement writes the last use, when the one recorded is a minute old.
 */
export async function findLiveSession(ctx: Context, token: string): Promise<LiveSession | null> {
  if (!token.startsWith(SESSION_TOKEN_PREFIX) || token.length > 200) return null;
  const now = ctx.clock.now();
  const [session] = await ctx.db.$queryRaw<LiveSession[]>`
    with s as (
      select s.id, s.user_id, s.organization_id, s.session_version, s.auth_time, s.created_at, s.expires_at
      from sessions s join users u on u.id = s.user_id and u.session_version = s.session_version
      where s.token_hash = ${sha256(token)}::text and s.revoked_at is null and s.expires_at > ${now}::timestamp(3)
    ), touched as (
      update sessions set last_seen_at = ${now}::timestamp(3)
      where id = (select id from s)
        and last_seen_at < ${now}::timestamp(3) - make_interval(secs => ${LAST_SEEN_GRANULARITY_SECONDS}::int)
    )
    select id, user_id as "userId", organization_id as "organizationId", session_version as "sessionVersion",
           auth_time as "authTime", created_at as "createdAt", expires_at as "expiresAt"
    from s`;
  return session ?? null;
}

/**
 * Which live sessions an ending names: one session (only if it is `userId`'s, when given), or the sessions of
 * `userId` (all but `allBut`, when given).
 */
export type SessionsToEnd = { id: string; userId?: string } | { userId: string; allBut?: string };

/**
 * Ends the live sessions `which` names, and what came from them, in the caller's transaction: a session.revoked
 * event each, and the OAuth grants they authorized with the grants' refresh tokens (access tokens stop at their next
 * use: verify-access-token.ts checks that the grant stands). The locked, conditional update decides: of two endings
 * of one session, one ends it. Two statements, not one: authorizing holds the session's row (KEY SHARE) while it
 * writes a grant (issue-code.ts liveSession); the first statement's FOR UPDATE waits for it, and only the second,
 * which reads afresh, sees that grant. An authorization that comes second waits instead, and then finds the session
 * ended. Sign-out, the person's own endings, a directory's deactivation and a take-over (take-over.ts) all end
 * sessions here.
 */
export async function endSessions(
  ctx: Context,
  tx: Tx,
  which: SessionsToEnd,
): Promise<{ id: string; userId: string }[]> {
  const now = ctx.clock.now();
  const sql = Prisma.sql;
  const named =
    'id' in which
      ? sql`s.id = ${which.id}::text ${which.userId === undefined ? Prisma.empty : sql`and s.user_id = ${which.userId}::text`}`
      : sql`s.user_id = ${which.userId}::text ${which.allBut === undefined ? Prisma.empty : sql`and s.id <> ${which.allBut}::text`}`;
  const ended = await tx.$queryRaw<{ id: string; userId: string }[]>`
    with named as (
      select s.id from sessions s join users u on u.id = s.user_id and u.session_version = s.session_version
      where s.revoked_at is null and s.expires_at > ${now}::timestamp(3) and ${named}
      for update of s
    )
    update sessions s set revoked_at = ${now}::timestamp(3) from named where s.id = named.id
    returning s.id, s.user_id as "userId"`;
  if (ended.length === 0) return ended;
  await tx.$executeRaw`
    with ended_grants as (
      update oauth_grants set revoked_at = ${now}::timestamp(3)
      where session_id = any(${ended.map((s) => s.id)}::text[]) and revoked_at is null
      returning id
    )
    update refresh_tokens set revoked_at = ${now}::timestamp(3)
    where grant_id in (select id from ended_grants) and revoked_at is null`;
  for (const session of ended) await emitUserEvent(tx, 'session.revoked', session.userId, { session }, { at: now });
  return ended;
}

/** Ends one session (sign-out) and the grants it authorized. */
export async function revokeSession(ctx: Context, sessionId: string): Promise<void> {
  await ctx.db.$transaction((tx) => endSessions(ctx, tx, { id: sessionId }));
}

/** A live session as its person sees it in the list of where they are signed in. */
export interface PersonSession {
  id: string;
  createdAt: Date;
  lastUsedAt: Date;
  expiresAt: Date;
  ip: string | null;
  userAgent: string | null;
  organization: { id: string; name: string } | null;
  /** The session this request came with. */
  current: boolean;
}

/** How many sessions the list shows at most, most recently used first. */
export const SESSION_LIST_LIMIT = 100;

/** The person and session behind the request: only a session lists or ends sessions, never a key or a token. */
function sessionActor(ctx: Context): { userId: string; sessionId: string } {
  const actor = ctx.actor;
  if (actor?.kind !== 'user') throw new SessionRequiredError('Managing sessions');
  return actor;
}

/** The caller's live sessions (not revoked, not expired, of the current session version), newest use first. */
export async function listMySessions(ctx: Context): Promise<PersonSession[]> {
  const { userId, sessionId } = sessionActor(ctx);
  const rows = await ctx.db.$queryRaw<
    (Omit<PersonSession, 'organization' | 'current'> & {
      organizationId: string | null;
      organizationName: string | null;
    })[]
  >`
    select s.id, s.created_at as "createdAt", s.last_seen_at as "lastUsedAt", s.expires_at as "expiresAt", s.ip,
           s.user_agent as "userAgent", o.id as "organizationId", o.name as "organizationName"
    from sessions s
      join users u on u.id = s.user_id and u.session_version = s.session_version
      left join organizations o on o.id = s.organization_id
    where s.user_id = ${userId}::text and s.revoked_at is null and s.expires_at > ${ctx.clock.now()}::timestamp(3)
    order by s.last_seen_at desc, s.id desc
    limit ${SESSION_LIST_LIMIT}::int`;
  return rows.map(({ organizationId, organizationName, ...row }) => ({
    ...row,
    organization: organizationId ? { id: organizationId, name: organizationName ?? '' } : null,
    current: row.id === sessionId,
  }));
}

/** Ends the caller's sessions that `which` names (endSessions), in one transaction with an audit entry for each. */
async function endMySessions(ctx: Context, which: SessionsToEnd): Promise<string[]> {
  return ctx.db.$transaction(async (tx) => {
    const ended = await endSessions(ctx, tx, which);
    for (const session of ended) {
      await recordAudit(ctx, { action: 'auth.session.revoke', targetType: 'session', targetId: session.id }, tx);
    }
    return ended.map((s) => s.id);
  });
}

/** Ends one of the caller's sessions; another person's, an ended or an unknown one is not found. */
export async function revokeMySession(ctx: Context, input: unknown): Promise<{ id: string; current: boolean }> {
  const { id } = parseInput(z.object({ id: fields.id }), input);
  const { userId, sessionId } = sessionActor(ctx);
  const [ended] = await endMySessions(ctx, { id, userId });
  if (!ended) throw new NotFoundError('Session');
  return { id: ended, current: ended === sessionId };
}

/** Signs out everywhere else: ends every live session of the caller but the current one, and says how many. */
export async function revokeOtherSessions(ctx: Context): Promise<number> {
  const { userId, sessionId } = sessionActor(ctx);
  return (await endMySessions(ctx, { userId, allBut: sessionId })).length;
}

/**
 * Ends every session of a person and all that came from them, everywhere: the sessions and their grants as any ending
 * does (endSessions), then the session version moves on, so that what no session recorded (a grant made before
 * grants named their session, a code, an mfa_token) stops at its next use too. For a deactivation by the directory
 * of the organization that manages the account (docs/architecture.md#managed-accounts) and a take-over of an
 * unproven one; the caller audits. The sessions ended, and the new session version.
 */
export async function endEverySession(
  ctx: Context,
  tx: Tx,
  userId: string,
): Promise<{ ended: { id: string }[]; sessionVersion: number }> {
  const ended = await endSessions(ctx, tx, { userId });
  const { sessionVersion } = await tx.user.update({
    where: { id: userId },
    data: { sessionVersion: { increment: 1 } },
    select: { sessionVersion: true },
  });
  return { ended, sessionVersion };
}

/** How many ended sessions one run of the worker's expire_sessions task takes at most. */
const EXPIRY_BATCH = 500;

/**
 * Announces sessions that reached their end of life (session.expired), each once: the worker calls this on a
 * schedule. Every session past expires_at is claimed, but only one that was still live up to then is announced: a
 * session signed out (session.revoked said so) or ended by a new session version was over before it expired.
 * Claiming and emitting happen in one transaction, so a crash announces nothing twice or never.
 */
export async function announceExpiredSessions(db: Context['db'], now: Date): Promise<number> {
  return db.$transaction(async (tx) => {
    const ended = await tx.$queryRaw<{ id: string; userId: string; createdAt: Date; expiresAt: Date; live: boolean }[]>`
      with claimed as (
        update sessions set expiry_announced_at = ${now}::timestamp(3)
        where id in (
          select id from sessions
          where expires_at <= ${now}::timestamp(3) and expiry_announced_at is null
          order by expires_at limit ${EXPIRY_BATCH} for update skip locked)
        returning id, user_id, session_version, revoked_at, created_at, expires_at)
      select c.id, c.user_id as "userId", c.created_at as "createdAt", c.expires_at as "expiresAt",
             (c.revoked_at is null and u.session_version = c.session_version) as live
      from claimed c join users u on u.id = c.user_id
      order by c.expires_at`;
    const live = ended.filter((s) => s.live);
    for (const { id, userId, createdAt, expiresAt } of live) {
      await emitUserEvent(
        tx,
        'session.expired',
        userId,
        { session: { id, userId, createdAt, expiresAt } },
        { at: now },
      );
    }
    return live.length;
  });
}
