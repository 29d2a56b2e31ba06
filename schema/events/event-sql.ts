// An event of the catalog as a data-modifying CTE, for the hot paths that write a change, its events and its
// audit entry in ONE statement (emitEvent's row: the organization's id and name, then the data).
import type { Context } from '../context.ts';
import { Prisma } from '../db.ts';
import { uuidv7 } from '../lib/ids.ts';
import { sqlJson, sqlText, type SqlValue } from '../lib/sql-value.ts';
import type { EventKind } from './catalog.ts';

export interface EventRow {
  kind: EventKind;
  /** The organization the event belongs to; its name is read in the statement. */
  organizationId: SqlValue;
  /** An object or a jsonb expression over the source rows. */
  data: Record<string, unknown> | Prisma.Sql;
}

/**
 * `name AS (INSERT INTO events ...)`, one row for each row of `from` (a CTE name or a from-list written in code,
 * never input) whose organization exists.
 */
export function eventRowCte(ctx: Context, name: string, from: string, e: EventRow): Prisma.Sql {
  return Prisma.sql`${Prisma.raw(name)} AS (
    INSERT INTO events (id, kind, organization_id, payload, created_at)
    SELECT ${uuidv7()}::text, ${e.kind}::text, evo.id,
           jsonb_build_object('organization', jsonb_build_object('id', evo.id, 'name', evo.name), 'data', ${sqlJson(e.data)}),
           ${ctx.clock.now()}::timestamp(3)
    FROM ${Prisma.raw(from)} JOIN organizations evo ON evo.id = ${sqlText(e.organizationId)})`;
}
