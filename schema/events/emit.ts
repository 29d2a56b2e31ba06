// Writing events into the outbox, inside the caller's transaction. The row keeps the envelope as the exact JSON
// text receivers get, {id, event, timestamp, organization, data}; the insert itself fans out (trigger
// events_webhook_fan_out, migration 20261124130000_hot_events_only_when_wanted) to a delivery row and a
// graphile-worker job for each active webhook of the organization subscribed to the kind, in the same transaction.
// So a committed change always has its events and deliveries, and a rolled-back one has none.
//
// `at` is the service clock's now (ctx.clock.now()): the timestamp receivers see and the row's created_at.
import { Prisma } from '../db.ts';
import { uuidv7 } from '../lib/ids.ts';
import {
  EVENT_CATALOG,
  type EventFacts,
  type EventKind,
  type OrganizationEventKind,
  type OrganizationRef,
  type UserEventKind,
} from './catalog.ts';
import { jsonTextSql } from './json-text.ts';
import { expected } from '../lib/expected.ts';

type Tx = Pick<Prisma.TransactionClient, 'event' | '$executeRaw'>;
export interface EmitOptions {
  at?: Date;
}

/** The kind's data from its facts: the catalog's builder, the only place that knows the shape. */
export const buildEventData = <K extends EventKind>(kind: K, facts: EventFacts<K>): Record<string, unknown> =>
  (EVENT_CATALOG[kind].data as (f: EventFacts<K>) => Record<string, unknown>)(facts);

/** The envelope as the exact text sent. */
export function eventBody(id: string, kind: string, at: Date, organization: OrganizationRef, data: unknown): string {
  return JSON.stringify({
    id,
    event: kind,
    timestamp: at.toISOString(),
    organization: { id: organization.id, name: organization.name },
    data,
  });
}

/** The same envelope as an SQL text expression, for events whose id or organization is read in the statement. */
export function eventBodySql(
  id: string | Prisma.Sql,
  kind: string,
  timestamp: string | Prisma.Sql,
  organization: { id: Prisma.Sql; name: Prisma.Sql },
  data: unknown,
): Prisma.Sql {
  return jsonTextSql({ id, event: kind, timestamp, organization, data });
}

/** Ids in the order of the kinds: one operation's events list in the order it emitted them. */
const orderedIds = (n: number) => Array.from({ length: n }, () => uuidv7()).sort();

/** One statement for all of them. */
async function write(
  tx: Tx,
  events: { kind: EventKind; data: Record<string, unknown> }[],
  organization: OrganizationRef,
  at: Date,
  webhookId: string | null,
) {
  const ids = orderedIds(events.length);
  await tx.event.createMany({
    data: events.map(({ kind, data }, i) => ({
      id: expected(ids[i], 'an id per event'),
      kind,
      organizationId: organization.id,
      body: eventBody(expected(ids[i], 'an id per event'), kind, at, organization, data),
      webhookId,
      createdAt: at,
    })),
  });
  return ids;
}

/** One event of an organization. Returns its id. */
export async function emitEvent<K extends OrganizationEventKind>(
  tx: Tx,
  kind: K,
  organization: OrganizationRef,
  facts: EventFacts<K>,
  options: EmitOptions = {},
): Promise<string> {
  const [id] = await write(
    tx,
    [{ kind, data: buildEventData(kind, facts) }],
    organization,
    options.at ?? new Date(),
    null,
  );
  return expected(id, 'the event id');
}

/** Every kind that describes one operation (list A and list B names): the same facts, each kind's own shape. */
export async function emitEvents<K extends OrganizationEventKind>(
  tx: Tx,
  kinds: readonly K[],
  organization: OrganizationRef,
  facts: EventFacts<K>,
  options: EmitOptions = {},
): Promise<void> {
  await write(
    tx,
    kinds.map((kind) => ({ kind, data: buildEventData(kind, facts) })),
    organization,
    options.at ?? new Date(),
    null,
  );
}

/**
 * An event about a person (user.*, session.*, 2fa.*): one for each organization `userId` belongs to now, in one
 * statement; none for a user without an organization. Call it where the memberships are as the event should see
 * them (after a membership is made, before one ends). Returns how many were written.
 */
export async function emitUserEvent<K extends UserEventKind>(
  tx: Tx,
  kind: K,
  userId: string,
  facts: EventFacts<K>,
  options: EmitOptions = {},
): Promise<number> {
  const at = options.at ?? new Date();
  const body = eventBodySql(
    Prisma.sql`x.id`,
    kind,
    at.toISOString(),
    { id: Prisma.sql`x.org_id`, name: Prisma.sql`x.org_name` },
    buildEventData(kind, facts),
  );
  return tx.$executeRaw`
    INSERT INTO events (id, kind, organization_id, body, created_at)
    SELECT x.id, ${kind}::text, x.org_id, ${body}, ${at}::timestamp(3)
    FROM (SELECT tessera_uuid_v7() AS id, o.id AS org_id, o.name AS org_name
          FROM memberships m JOIN organizations o ON o.id = m.organization_id
          WHERE m.user_id = ${userId}::text ORDER BY o.id) x`;
}

/** A test event of any kind, with its example data, for one webhook only (the fan-out sends it nowhere else). */
export async function emitTestEvent(
  tx: Tx,
  kind: EventKind,
  organization: OrganizationRef,
  webhookId: string,
  at: Date,
): Promise<string> {
  const [id] = await write(
    tx,
    [{ kind, data: { ...EVENT_CATALOG[kind].example, test: true } }],
    organization,
    at,
    webhookId,
  );
  return expected(id, 'the event id');
}
