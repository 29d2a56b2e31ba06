// Every change, and every failed sign-in or client authentication, leaves an audit entry.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { parseInput } from '../../lib/input.ts';
import type { Prisma } from '../../db.ts';

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

export async function recordAudit(ctx: Context, entry: AuditEntry, tx: Tx = ctx.db): Promise<void> {
  const actor = actorOf(ctx);
  await tx.auditLog.create({
    data: {
      action: entry.action,
      organizationId: entry.organizationId ?? (ctx.actor?.organizationId || null),
      actorType: entry.actorId !== undefined ? (entry.actorId ? 'user' : 'anonymous') : actor.type,
      actorId: entry.actorId !== undefined ? entry.actorId : actor.id,
      targetType: entry.targetType ?? null,
      targetId: entry.targetId ?? null,
      outcome: entry.outcome ?? 'success',
      ip: ctx.request.ip,
      userAgent: ctx.request.userAgent?.slice(0, 500) ?? null,
      details: (entry.details ?? {}) as Prisma.InputJsonValue,
    },
  });
}

const input = z.object({
  organizationId: z.string().max(100),
  limit: z.number().int().min(1).max(200).nullish(),
  before: z.string().max(100).nullish(),
});

/** Newest first; `before` is the id of the last entry seen. Access is checked by the field's scope. */
export async function listAuditLogs(ctx: Context, args: { organizationId: string; limit?: number | null; before?: string | null; query?: object }) {
  const { organizationId, limit, before } = parseInput(input, { organizationId: args.organizationId, limit: args.limit, before: args.before });
  return ctx.db.auditLog.findMany({
    ...(args.query ?? {}),
    where: { organizationId, ...(before ? { id: { lt: before } } : {}) },
    orderBy: { id: 'desc' },
    take: limit ?? 50,
  });
}
