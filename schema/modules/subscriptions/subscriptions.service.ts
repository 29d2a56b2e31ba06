// Subscriptions: an organization's seats of a product at a price per seat. Platform admins create and change
// them for any organization; the organization's members read their own (another tenant's answer 404). Status
// moves exactly as the interface's table says: any allowed value by PATCH, cancelled by PATCH or DELETE (the
// record stays), expired by the worker at end_date.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import type { Db, Prisma } from '../../db.ts';
import { NotFoundError } from '../../errors/index.ts';
import {
  isPlatformAdmin,
  readableOrganizationIdsOf,
  requireActor,
  requireOrgRole,
  requirePlatformAdmin,
} from '../../auth/access.ts';
import { snakeCase } from '../../lib/case.ts';
import { fields, parseInput, TIMESTAMP_RULE } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { emitEvent } from '../../events/emit.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { SeatsInUseError, SubscriptionWriterOnlyError } from './subscriptions.errors.ts';

type Tx = Prisma.TransactionClient;

export const SUBSCRIPTION_STATUSES = ['active', 'trial', 'cancelled', 'expired'] as const;
export const BILLING_CYCLES = ['monthly', 'yearly'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

const MAX_SEATS = 1_000_000;
const seats = z
  .number({ message: 'must be a number' })
  .int('must be a whole number')
  .min(0, 'must not be negative')
  .max(MAX_SEATS, `must be at most ${MAX_SEATS}`);
// Exact decimal text: numeric(12,2) holds up to 10 digits before the point and 2 after.
const price = z
  .string({ message: 'must be a number' })
  .trim()
  .regex(/^\d{1,10}(\.\d{1,2})?$/, 'must be a non-negative amount with at most 2 decimals (and below 10000000000)');
const status = z.enum(SUBSCRIPTION_STATUSES, { message: 'must be active, trial, cancelled or expired' });
const cycle = z.enum(BILLING_CYCLES, { message: 'must be monthly or yearly' });
// A Date already: the DateTime scalar read it by the one rule for timestamps (fields.timestamp).
const endDate = z
  .date({ message: TIMESTAMP_RULE })
  .min(new Date('1970-01-01T00:00:00Z'), 'must be after 1970')
  .max(new Date('9999-12-31T23:59:59Z'), 'must be before the year 10000')
  .nullable();

const createInput = z
  .object({
    organizationId: fields.id,
    productId: fields.id,
    totalSeats: seats,
    pricePerSeat: price,
    billingCycle: cycle,
    // The table's only creation row has a status; an omitted one means a running subscription.
    status: status.default('active'),
    endDate: endDate.optional(),
  })
  .strict();
const updateInput = z
  .object({ totalSeats: seats, pricePerSeat: price, billingCycle: cycle, status, endDate })
  .partial()
  .strict();
type Update = z.output<typeof updateInput>;
type Field = keyof Update;
const listInput = z.object({
  organizationId: fields.id.nullish(),
  productId: fields.id.nullish(),
  status: status.nullish(),
});

/** What every read returns: the record with its product, organization and the number of assigned seats. */
const INCLUDE = {
  product: true,
  organization: { select: { id: true, name: true } },
  _count: { select: { seats: true } },
} as const;

type Row = Prisma.SubscriptionGetPayload<{ include: typeof INCLUDE }>;
export type SubscriptionView = Omit<Row, '_count'> & { assignedSeats: number };

const view = ({ _count, ...row }: Row): SubscriptionView => ({ ...row, assignedSeats: _count.seats });

type ChangeKind = 'subscription.updated' | 'subscription.cancelled' | 'subscription.renewed';

/** A change's event: the catalog's builder gives the snake_case shape of list B (see events/catalog.ts). */
async function emitChange(
  tx: Tx,
  kind: ChangeKind,
  after: SubscriptionView,
  before: Pick<SubscriptionView, 'status' | 'endDate'>,
  changes: string[],
  at: Date,
  reason: string | null = null,
) {
  await emitEvent(
    tx,
    kind,
    after.organization,
    { subscription: after, changes, previousStatus: before.status, previousEndDate: before.endDate, reason },
    { at },
  );
}

/** Reads a subscription the caller may see: another tenant's (or an unknown one) is not found. */
async function findVisible(ctx: Context, id: string) {
  requireActor(ctx);
  const row =
    id.length <= 100 ? await ctx.db.subscription.findUnique({ where: { id }, select: { organizationId: true } }) : null;
  if (!row) throw new NotFoundError('Subscription');
  await requireOrgRole(ctx, row.organizationId, 'member', 'Subscription');
  return row;
}

const requireSubscriptionWriter = (ctx: Context) => requirePlatformAdmin(ctx, SubscriptionWriterOnlyError);

/** Takes the subscription's row lock: seat assignments and changes of one subscription take turns. */
export async function lockSubscription(tx: Tx, id: string) {
  const [row] = await tx.$queryRaw<
    { id: string; organization_id: string; total_seats: number; status: SubscriptionStatus }[]
  >`
    select id, organization_id, total_seats, status::text as status from subscriptions where id = ${id} for update`;
  if (!row) throw new NotFoundError('Subscription');
  return row;
}

export async function listSubscriptions(ctx: Context, filters: unknown, page?: PageInput) {
  requireActor(ctx);
  const f = parseInput(listInput, filters);
  // A bad page is a 400 whatever the filters name.
  paged(page, {});
  let organizations: Prisma.SubscriptionWhereInput = {};
  if (f.organizationId) {
    await requireOrgRole(ctx, f.organizationId, 'member');
    organizations = { organizationId: f.organizationId };
  } else if (!(await isPlatformAdmin(ctx))) {
    organizations = { organizationId: { in: await readableOrganizationIdsOf(ctx) } };
  }
  const where = {
    ...organizations,
    ...(f.status ? { status: f.status } : {}),
    ...(f.productId ? { productId: f.productId } : {}),
  };
  const { limit, args } = paged(page, where);
  const rows = await ctx.db.subscription.findMany({ ...args, include: INCLUDE });
  return toPage(rows.map(view), limit);
}

export async function getSubscription(ctx: Context, id: string) {
  await findVisible(ctx, id);
  return view(await ctx.db.subscription.findUniqueOrThrow({ where: { id }, include: INCLUDE }));
}

export async function createSubscription(ctx: Context, input: unknown) {
  requireActor(ctx);
  const data = parseInput(createInput, input);
  await requireOrgRole(ctx, data.organizationId, 'member');
  await requireSubscriptionWriter(ctx);
  const product = await ctx.db.product.findUnique({ where: { id: data.productId }, select: { id: true } });
  if (!product) throw new NotFoundError('Product');
  return ctx.db.$transaction(async (tx) => {
    const created = view(
      await tx.subscription.create({ data: { ...data, endDate: data.endDate ?? null }, include: INCLUDE }),
    );
    await emitEvent(
      tx,
      'subscription.created',
      created.organization,
      { subscription: created },
      { at: ctx.clock.now() },
    );
    await recordAudit(
      ctx,
      {
        action: 'subscription.create',
        organizationId: created.organizationId,
        targetType: 'subscription',
        targetId: created.id,
        details: { product: created.product.slug, status: created.status, totalSeats: created.totalSeats },
      },
      tx,
    );
    return created;
  });
}

/**
 * The events a change emits: `subscription.cancelled` when it moves to cancelled, `subscription.updated` for any
 * other change, and `subscription.renewed` too when an active subscription's end_date moves later.
 */
function kindsOf(before: SubscriptionView, after: SubscriptionView, changed: string[]): ChangeKind[] {
  const kinds: ChangeKind[] = [];
  const cancelled = before.status !== 'cancelled' && after.status === 'cancelled';
  if (changed.some((f) => f !== 'status') || (changed.includes('status') && !cancelled))
    kinds.push('subscription.updated');
  if (cancelled) kinds.push('subscription.cancelled');
  const renewed = after.status === 'active' && before.endDate && after.endDate && after.endDate > before.endDate;
  if (renewed) kinds.push('subscription.renewed');
  return kinds;
}

/** The fields whose value differs from the record (so a PATCH that repeats the current values emits nothing). */
function changedFields(before: SubscriptionView, data: Update): Field[] {
  const same: { [K in Field]: (v: Update[K]) => boolean } = {
    totalSeats: (v) => v === before.totalSeats,
    pricePerSeat: (v) => Number(v) === before.pricePerSeat.toNumber(),
    billingCycle: (v) => v === before.billingCycle,
    status: (v) => v === before.status,
    endDate: (v) => (v?.getTime() ?? null) === (before.endDate?.getTime() ?? null),
  };
  const differs = <K extends Field>(k: K) => data[k] !== undefined && !same[k](data[k]);
  // The input is parsed strictly: its keys are the update's fields, in the order given.
  return (Object.keys(data) as Field[]).filter(differs);
}

async function change(ctx: Context, id: string, data: z.output<typeof updateInput>, action: string) {
  await requireSubscriptionWriter(ctx);
  return ctx.db.$transaction(async (tx) => {
    await lockSubscription(tx, id);
    const before = view(await tx.subscription.findUniqueOrThrow({ where: { id }, include: INCLUDE }));
    const changed = changedFields(before, data);
    if (!changed.length) return before;
    if (data.totalSeats !== undefined && data.totalSeats < before.assignedSeats)
      throw new SeatsInUseError(before.assignedSeats);
    const patch = Object.fromEntries(changed.map((k) => [k, data[k]]));
    const after = view(await tx.subscription.update({ where: { id }, data: patch, include: INCLUDE }));
    for (const kind of kindsOf(before, after, changed)) {
      await emitChange(tx, kind, after, before, changed.map(snakeCase), ctx.clock.now());
    }
    await recordAudit(
      ctx,
      {
        action,
        organizationId: after.organizationId,
        targetType: 'subscription',
        targetId: id,
        details: { fields: changed, from: before.status, to: after.status },
      },
      tx,
    );
    return after;
  });
}

export async function updateSubscription(ctx: Context, id: string, input: unknown) {
  await findVisible(ctx, id);
  const data = parseInput(updateInput, input);
  return change(ctx, id, data, data.status === 'cancelled' ? 'subscription.cancel' : 'subscription.update');
}

/** DELETE is a cancel: the record stays, with status cancelled. Cancelling a cancelled one changes nothing. */
export async function cancelSubscription(ctx: Context, id: string) {
  await findVisible(ctx, id);
  return change(ctx, id, { status: 'cancelled' }, 'subscription.cancel');
}

/**
 * Expires every active or trial subscription whose end_date has passed (the worker's sweep), in batches; each
 * one emits subscription.updated. Returns how many it expired.
 */
export async function expireSubscriptions(db: Db, now: Date): Promise<number> {
  let total = 0;
  for (;;) {
    const done = await db.$transaction(async (tx) => {
      const rows = await tx.$queryRaw<{ id: string; status: SubscriptionStatus }[]>`
        select id, status::text as status from subscriptions
        where status in ('active', 'trial') and end_date <= ${now}
        order by end_date limit 200 for update skip locked`;
      if (!rows.length) return 0;
      await tx.subscription.updateMany({ where: { id: { in: rows.map((r) => r.id) } }, data: { status: 'expired' } });
      const expired = await tx.subscription.findMany({
        where: { id: { in: rows.map((r) => r.id) } },
        include: INCLUDE,
      });
      const previous = new Map(rows.map((r) => [r.id, r.status]));
      for (const s of expired.map(view)) {
        const from = previous.get(s.id);
        if (!from) throw new Error(`expireSubscriptions: ${s.id} was not among the rows it locked`);
        await emitChange(
          tx,
          'subscription.updated',
          s,
          { status: from, endDate: s.endDate },
          ['status'],
          now,
          'end_date_passed',
        );
        await tx.auditLog.create({
          data: {
            action: 'subscription.expire',
            organizationId: s.organizationId,
            actorType: 'system',
            actorId: null,
            targetType: 'subscription',
            targetId: s.id,
            outcome: 'success',
            details: { from, endDate: s.endDate?.toISOString() ?? null },
          },
        });
      }
      return rows.length;
    });
    total += done;
    if (done < 200) return total;
  }
}
