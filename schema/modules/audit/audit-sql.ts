// The audit row of recordAudit, as a data-modifying CTE for the hot paths that write everything in ONE statement
// (authorization codes, consent answers, the token endpoint): the same columns, the same secret filter.
import type { Context } from '../../context.ts';
import { Prisma } from '../../db.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { sqlJson, sqlText, type SqlValue } from '../../lib/sql-value.ts';
import { withoutSecrets } from './audit.service.ts';

export interface AuditRow {
  action: string;
  organizationId: SqlValue;
  actorType: 'user' | 'anonymous' | 'api_key' | 'oauth_client';
  actorId: SqlValue;
  targetType: string;
  targetId: SqlValue;
  outcome?: 'success' | 'failure';
  /** An object (credentials left out, as recordAudit does) or a jsonb expression over the source rows. */
  details: Record<string, unknown> | Prisma.Sql;
}

/** Who and when of an audit row: the request's; a hot statement passes its placeholders (db.ts hotStatement). */
export interface AuditStamp {
  id: string;
  ip: string | null;
  userAgent: string | null;
  at: Date;
}

export const auditStamp = (ctx: Context): AuditStamp => ({
  id: uuidv7(),
  ip: ctx.request.ip,
  userAgent: ctx.request.userAgent?.slice(0, 500) ?? null,
  at: ctx.clock.now(),
});

/**
 * `name AS (INSERT INTO audit_logs ...)`, one row for each row of `from` (a CTE name or a from-list written in
 * code, never input); `from` null writes exactly one row. The stamp gives its id, time, ip and user agent.
 */
export function auditRowCte(stamp: AuditStamp, name: string, from: string | null, e: AuditRow): Prisma.Sql {
  const details =
    e.details instanceof Prisma.Sql ? e.details : sqlJson(withoutSecrets(e.details) as Record<string, unknown>);
  return Prisma.sql`${Prisma.raw(name)} AS (
    INSERT INTO audit_logs (id, organization_id, actor_type, actor_id, action, target_type, target_id, outcome, ip, user_agent, details, created_at)
    SELECT ${stamp.id}::text, ${sqlText(e.organizationId)}, ${e.actorType}::text, ${sqlText(e.actorId)}, ${e.action}::text,
           ${e.targetType}::text, ${sqlText(e.targetId)}, ${e.outcome ?? 'success'}::"AuditOutcome",
           ${stamp.ip}::text, ${stamp.userAgent}::text, ${details}, ${stamp.at}::timestamp(3)
    ${from === null ? Prisma.empty : Prisma.sql`FROM ${Prisma.raw(from)}`})`;
}
