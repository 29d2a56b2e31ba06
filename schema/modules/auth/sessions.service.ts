// Sessions: an opaque token (stored hashed) that works as a Bearer token and as the portal's cookie. Each
// carries the user's session version; bumping the version ends every session and token at once.
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { addSeconds } from '../../lib/clock.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { emitUserEvent } from '../../events/emit.ts';

export const SESSION_TTL_SECONDS = 7 * 24 * 3600;
export const SESSION_TOKEN_PREFIX = 'tss_';

export interface IssuedSession {
  token: string;
  session: { id: string; createdAt: Date; expiresAt: Date; organizationId: string | null; authTime: Date };
}

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

/** `authTime` is when the person last proved who they are: now, unless the session continues an earlier sign-in. */
export async function createSession(
  ctx: Context, tx: Tx, userId: string, sessionVersion: number, organizationId?: string | null, authTime?: Date,
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
      createdAt: now,
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

/**
 * Finds the live session for a token, or null (unknown, revoked, expired, or older than the session version).
 * One statement: every authenticated request of a browser or a session token comes through here.
 */
export async function findLiveSession(ctx: Context, token: string): Promise<LiveSession | null> {
  if (!token.startsWith(SESSION_TOKEN_PREFIX) || token.length > 200) return null;
  const [session] = await ctx.db.$queryRaw<LiveSession[]>`
    select s.id, s.user_id as "userId", s.organization_id as "organizationId", s.session_version as "sessionVersion",
           s.auth_time as "authTime", s.created_at as "createdAt", s.expires_at as "expiresAt"
    from sessions s join users u on u.id = s.user_id and u.session_version = s.session_version
    where s.token_hash = ${sha256(token)}::text and s.revoked_at is null and s.expires_at > ${ctx.clock.now()}::timestamp(3)`;
  return session ?? null;
}

export async function revokeSession(ctx: Context, sessionId: string): Promise<void> {
  await ctx.db.$transaction(async (tx) => {
    const now = ctx.clock.now();
    const [ended] = await tx.$queryRaw<{ id: string; userId: string }[]>`
      update sessions set revoked_at = ${now}::timestamp(3) where id = ${sessionId}::text and revoked_at is null returning id, user_id as "userId"`;
    if (ended) await emitUserEvent(tx, 'session.revoked', ended.userId, { session: ended }, { at: now });
  });
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
      await emitUserEvent(tx, 'session.expired', userId, { session: { id, userId, createdAt, expiresAt } }, { at: now });
    }
    return live.length;
  });
}
