// An event of the catalog as a data-modifying CTE, for the hot paths that write a change, its events and its
// audit entry in ONE statement. It writes what emitEvent writes: the envelope as exact text in `body`, built by the
// kind's builder and serialized in SQL byte for byte as JSON.stringify would (json-text.ts), so receivers get the
// same envelope from both paths. Unlike emitEvent it stores the event only when a webhook will receive it, by the
// rule the fan-out trigger delivers by (tessera_webhooks_wanting, migration 20261124130000_hot_events_only_when_wanted):
// most organizations have none, and an event no webhook receives was a row per authorize and token request that
// nothing reads.
import type { Context } from '../context.ts';
import { Prisma } from '../db.ts';
import { uuidv7 } from '../lib/ids.ts';
import { sqlText, type SqlValue } from '../lib/sql-value.ts';
import type { EventFacts, OrganizationEventKind } from './catalog.ts';
import { buildEventData, eventBodySql } from './emit.ts';
import type { SqlLeaves } from './json-text.ts';

export interface EventRow<K extends OrganizationEventKind> {
  kind: K;
  /** The organization the event belongs to; its name is read in the statement. */
  organizationId: SqlValue;
  /** The kind's facts; a leaf may be an SQL expression over the source rows. */
  facts: SqlLeaves<EventFacts<K>>;
}

/** The event's id and time; a hot statement passes its placeholders for both (db.ts hotStatement). */
export interface EventStamp {
  id: string;
  at: Date;
}

export const eventStamp = (ctx: Context): EventStamp => ({ id: uuidv7(), at: ctx.clock.now() });

/**
 * `name AS (INSERT INTO events ...)`, one row for each row of `from` (a CTE name or a from-list written in code,
 * never input, yielding at most one row: the id is the stamp's) whose organization exists and
 * has a webhook that wants the kind.
 */
export function eventRowCte<K extends OrganizationEventKind>(
  stamp: EventStamp,
  name: string,
  from: string,
  e: EventRow<K>,
): Prisma.Sql {
  const { id, at } = stamp;
  const data = buildEventData(e.kind, e.facts as EventFacts<K>);
  // Concrete values go into the envelope's constant text; placeholders are read as SQL text (the same bytes).
  const envelopeId = typeof id === 'string' ? id : Prisma.sql`${id}::text`;
  const timestamp = at instanceof Date ? at.toISOString() : Prisma.sql`${at}::text`;
  const body = eventBodySql(
    envelopeId,
    e.kind,
    timestamp,
    { id: Prisma.sql`evo.id`, name: Prisma.sql`evo.name` },
    data,
  );
  return Prisma.sql`${Prisma.raw(name)} AS (
    INSERT INTO events (id, kind, organization_id, body, created_at)
    SELECT ${id}::text, ${e.kind}::text, evo.id, ${body}, ${at}::timestamp(3)
    FROM ${Prisma.raw(from)} JOIN organizations evo ON evo.id = ${sqlText(e.organizationId)}
    WHERE EXISTS (SELECT 1 FROM tessera_webhooks_wanting(evo.id, ${e.kind}::text, NULL)))`;
}
