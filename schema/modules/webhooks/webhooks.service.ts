// Webhooks of an organization (docs/architecture.md#events-webhooks-and-the-outbox): its admins and owners create them (an https URL that passes the SSRF
// guard, events chosen from the catalog), edit, pause, delete them, regenerate the secret, send a test event, read
// the delivery history and retry a delivery whose last attempt failed. Another tenant's webhook is not found. An organization has at
// most WEBHOOK_LIMIT_PER_ORGANIZATION webhooks: every event goes to each of them, so their number bounds how many
// requests one change makes Tessera send to third parties. The signing secret is in the answer of creation and
// rotation only; afterwards an owner may reveal it again, and each reveal is audited.
import { z } from 'zod';
import type { Context, Role } from '../../context.ts';
import { Prisma } from '../../db.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../errors/index.ts';
import { organizationInScope, requireOrgRole } from '../../auth/access.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { EVENT_KINDS, eventTypeList, isEventKind } from '../../events/catalog.ts';
import { emitTestEvent } from '../../events/emit.ts';
import { checkDestination, DEFAULT_WEBHOOK_SETTINGS } from '../../push/destination.ts';
import { DestinationError } from '../../push/push.errors.ts';
import { seal, unseal } from '../../lib/sealed.ts';
import { newSecret } from '../../push/secret.ts';
import { STUCK_AFTER_SECONDS } from '../../push/signed-attempt.ts';
import { deliverJobSql } from './delivery.service.ts';
import { WebhookLimitError } from './webhooks.errors.ts';

/** The most webhooks an organization may have when WEBHOOK_LIMIT_PER_ORGANIZATION is not set. */
export const DEFAULT_WEBHOOK_LIMIT = 20;

const kind = z
  .string()
  .refine(isEventKind, { message: 'is not an event kind of the catalog (GET /api/v1/event-types)' });
const eventList = z
  .array(kind)
  .min(1, 'must name at least one event')
  .max(EVENT_KINDS.length)
  .transform((list) => [...new Set(list)]);
const url = z.string().trim().max(2048, 'must be at most 2048 characters');
const description = z.string().trim().max(500, 'must be at most 500 characters');

const createInput = z.object({
  organizationId: fields.id.nullish(),
  url,
  events: eventList,
  description: description.nullish(),
});
const updateInput = z.object({
  url: url.optional(),
  events: eventList.optional(),
  description: description.nullish(),
  isActive: z.boolean().optional(),
});

export function eventTypes() {
  return eventTypeList();
}

/** The SSRF guard at creation and edit; the same check runs again before every attempt. */
async function checkUrl(ctx: Context, value: string): Promise<string> {
  try {
    await checkDestination(value, ctx.settings.webhooks ?? DEFAULT_WEBHOOK_SETTINGS);
    return value;
  } catch (error) {
    if (error instanceof DestinationError)
      throw new ValidationError('The webhook URL is not allowed', [{ path: 'url', message: error.message }]);
    throw error;
  }
}

/** The webhook, if the caller holds `min` in its organization; with no role there it does not exist. */
async function ownWebhook(ctx: Context, id: unknown, min: Role = 'admin') {
  const webhookId = parseInput(fields.id, id);
  const webhook = await ctx.db.webhook.findUnique({
    where: { id: webhookId },
    include: { organization: { select: { id: true, name: true } } },
  });
  if (!webhook) throw new NotFoundError('Webhook');
  await requireOrgRole(ctx, webhook.organizationId, min, 'Webhook');
  return webhook;
}

/** A webhook with its secret in clear: what creation and rotation answer, and nothing else. */
export type WebhookWithSecret<W> = W & { secret: string };

async function withSecret<W extends { secretEncrypted: string }>(
  ctx: Context,
  webhook: W,
): Promise<WebhookWithSecret<W>> {
  return { ...webhook, secret: await unseal(webhook.secretEncrypted, ctx.settings.secretKey) };
}

export async function listWebhooks(ctx: Context, organizationId?: string | null, page?: PageInput) {
  const orgId = organizationInScope(ctx, organizationId);
  await requireOrgRole(ctx, orgId, 'admin');
  const { limit, args } = paged(page, { organizationId: orgId });
  return toPage(await ctx.db.webhook.findMany(args), limit);
}

export const getWebhook = (ctx: Context, id: unknown) => ownWebhook(ctx, id);

export async function createWebhook(ctx: Context, input: unknown) {
  const data = parseInput(createInput, input);
  const organizationId = organizationInScope(ctx, data.organizationId);
  await requireOrgRole(ctx, organizationId, 'admin');
  const target = await checkUrl(ctx, data.url);
  const secretEncrypted = await seal(newSecret(), ctx.settings.secretKey);
  const limit = ctx.settings.webhookLimitPerOrganization ?? DEFAULT_WEBHOOK_LIMIT;
  const created = await ctx.db.$transaction(async (tx) => {
    // Creates in one organization take turns on its row, so two cannot both see room for one more. The count is a
    // statement of its own after the lock: it then sees every webhook committed before the lock was ours (within
    // one statement it would see only those committed when that statement began). `no key update` leaves rows
    // that refer to the organization free to be written meanwhile.
    await tx.$executeRaw`select 1 from organizations where id = ${organizationId} for no key update`;
    if ((await tx.webhook.count({ where: { organizationId } })) >= limit) throw new WebhookLimitError(limit);
    const webhook = await tx.webhook.create({
      data: { organizationId, url: target, events: data.events, description: data.description ?? '', secretEncrypted },
    });
    await recordAudit(
      ctx,
      {
        action: 'webhook.create',
        organizationId,
        targetType: 'webhook',
        targetId: webhook.id,
        details: { url: target, events: data.events },
      },
      tx,
    );
    return webhook;
  });
  return withSecret(ctx, created);
}

export async function updateWebhook(ctx: Context, id: unknown, input: unknown) {
  const webhook = await ownWebhook(ctx, id);
  const data = parseInput(updateInput, input);
  const target = data.url === undefined ? undefined : await checkUrl(ctx, data.url);
  return ctx.db.$transaction(async (tx) => {
    const updated = await tx.webhook.update({
      where: { id: webhook.id },
      data: {
        url: target,
        events: data.events,
        isActive: data.isActive,
        description: data.description === undefined ? undefined : (data.description ?? ''),
      },
    });
    const changes = Object.keys(data).filter((k) => (data as Record<string, unknown>)[k] !== undefined);
    await recordAudit(
      ctx,
      {
        action: 'webhook.update',
        organizationId: webhook.organizationId,
        targetType: 'webhook',
        targetId: webhook.id,
        details: { changes },
      },
      tx,
    );
    return updated;
  });
}

export async function deleteWebhook(ctx: Context, id: unknown) {
  const webhook = await ownWebhook(ctx, id);
  await ctx.db.$transaction(async (tx) => {
    // Its pending jobs find no delivery and end without a request.
    await tx.webhook.delete({ where: { id: webhook.id } });
    await recordAudit(
      ctx,
      { action: 'webhook.delete', organizationId: webhook.organizationId, targetType: 'webhook', targetId: webhook.id },
      tx,
    );
  });
  return webhook;
}

/** A new secret; the old one signs nothing from now on (attempts read the secret when they run). */
export async function rotateWebhookSecret(ctx: Context, id: unknown) {
  const webhook = await ownWebhook(ctx, id);
  const secretEncrypted = await seal(newSecret(), ctx.settings.secretKey);
  const updated = await ctx.db.$transaction(async (tx) => {
    const updated = await tx.webhook.update({ where: { id: webhook.id }, data: { secretEncrypted } });
    await recordAudit(
      ctx,
      {
        action: 'webhook.rotate_secret',
        organizationId: webhook.organizationId,
        targetType: 'webhook',
        targetId: webhook.id,
      },
      tx,
    );
    return updated;
  });
  return withSecret(ctx, updated);
}

/**
 * The current secret again, for an owner of the webhook's organization (platform admins act as owners) who lost it;
 * admins rotate instead. Recorded in the audit trail before it is answered. Never for an OAuth access token: an app
 * must not turn a token into a credential that outlives it.
 */
export async function revealWebhookSecret(ctx: Context, id: unknown) {
  const webhook = await ownWebhook(ctx, id, 'owner');
  const secret = await unseal(webhook.secretEncrypted, ctx.settings.secretKey);
  await recordAudit(ctx, {
    action: 'webhook.secret.reveal',
    organizationId: webhook.organizationId,
    targetType: 'webhook',
    targetId: webhook.id,
  });
  return { webhookId: webhook.id, secret };
}

/** An event of the chosen kind with its example data, delivered to this webhook only (like any other). */
export async function sendTestEvent(ctx: Context, id: unknown, event: unknown) {
  const webhook = await ownWebhook(ctx, id);
  const chosen = parseInput(z.object({ event: kind }), { event }).event;
  if (!webhook.isActive) throw new ConflictError('The webhook is inactive: activate it to send a test event');
  return ctx.db.$transaction(async (tx) => {
    const eventId = await emitTestEvent(tx, chosen, webhook.organization, webhook.id, ctx.clock.now());
    await recordAudit(
      ctx,
      {
        action: 'webhook.test',
        organizationId: webhook.organizationId,
        targetType: 'webhook',
        targetId: webhook.id,
        details: { event: chosen },
      },
      tx,
    );
    return tx.webhookDelivery.findFirstOrThrow({ where: { eventId, webhookId: webhook.id }, include: deliveryDetail });
  });
}

export const deliveryDetail = {
  event: { select: { id: true, body: true, createdAt: true } },
  attemptLog: { orderBy: { attempt: 'asc' } },
} as const satisfies Prisma.WebhookDeliveryInclude;

export async function listDeliveries(ctx: Context, webhookId: unknown, page?: PageInput) {
  const webhook = await ownWebhook(ctx, webhookId);
  const { limit, args } = paged(page, { webhookId: webhook.id }, { newestFirst: true });
  return toPage(await ctx.db.webhookDelivery.findMany({ ...args, include: deliveryDetail }), limit);
}

/**
 * Retry now: a delivery whose last attempt failed is tried again at once, one more attempt recorded like the others,
 * even while later attempts are scheduled (docs/architecture.md#events-webhooks-and-the-outbox). A delivery has one
 * job at a time, keyed webhook_delivery:<id>: a pending delivery's scheduled job is moved to now, a failed one's is
 * queued again, and retry_requested_at makes the attempt that job makes a manual one, outside the schedule (see
 * delivery.service.ts): its success ends the delivery, and its failure leaves the next scheduled attempt where it
 * was. Nothing is doubled: while a retry is on its way, or any attempt of the delivery is being made, another is
 * refused (409) until that attempt is recorded. `webhookId`, when given, is the webhook the delivery must belong to.
 */
export async function retryDelivery(ctx: Context, deliveryId: unknown, webhookId?: unknown) {
  const id = parseInput(fields.id, deliveryId);
  const ofWebhook = webhookId === undefined || webhookId === null ? null : parseInput(fields.id, webhookId);
  const delivery = await ctx.db.webhookDelivery.findUnique({
    where: { id },
    include: { webhook: { select: { organizationId: true, isActive: true } } },
  });
  if (!delivery || (ofWebhook !== null && delivery.webhookId !== ofWebhook)) throw new NotFoundError('Delivery');
  await requireOrgRole(ctx, delivery.webhook.organizationId, 'admin', 'Delivery');
  const now = ctx.clock.now();
  const jobKey = `webhook_delivery:${id}`;
  return ctx.db.$transaction(async (tx) => {
    // Retries of one delivery take turns on its row, and each sees the state the last attempt left.
    const [row] = await tx.$queryRaw<{ status: string; attempts: number; asked: boolean }[]>`
      select status, attempts, retry_requested_at > ${new Date(now.getTime() - STUCK_AFTER_SECONDS * 1000)}::timestamp(3) as asked
      from webhook_deliveries where id = ${id} for update`;
    if (!row) throw new NotFoundError('Delivery');
    if (row.status === 'delivered') throw new ConflictError('The delivery was delivered: there is nothing to retry');
    if (row.status === 'pending' && row.attempts === 0)
      throw new ConflictError('No attempt of this delivery has been made yet: the first is on its way');
    if (!delivery.webhook.isActive) throw new ConflictError('The webhook is inactive: activate it to retry');
    // One manual attempt at a time; a request whose attempt never came (its worker died) may be made again.
    if (row.asked) throw new ConflictError('A retry of this delivery is already on its way');
    if (row.status === 'failed') {
      // Its schedule is spent and its last job has ended (or is ending, past its record): queue the attempt anew.
      await tx.$executeRaw`update webhook_deliveries set status = 'pending', next_attempt_at = ${now}::timestamp(3), retry_requested_at = ${now}::timestamp(3), updated_at = ${now}::timestamp(3)
        where id = ${id}`;
      await tx.$queryRaw`select (${deliverJobSql(id, delivery.webhookId, row.attempts + 1, null)}).id`;
    } else {
      // Its next attempt's job is waiting for its time: move it to now. reschedule_jobs leaves a locked job alone in
      // the same statement, so a worker that took it first keeps it, and one that comes after finds it moved.
      const moved = await tx.$queryRaw<unknown[]>`
        select id from graphile_worker.reschedule_jobs(array(select id from graphile_worker.jobs where key = ${jobKey}), run_at => now())`;
      if (!moved.length) {
        const [job] = await tx.$queryRaw<{ running: boolean }[]>`
          select locked_at > now() - make_interval(secs => ${STUCK_AFTER_SECONDS}::int) as running from graphile_worker.jobs where key = ${jobKey}`;
        if (job?.running) throw new ConflictError('An attempt of this delivery is being made: retry once it has ended');
        // No job (a paused webhook's attempt found nothing to do), or one whose worker died: queue it anew, as the
        // sweep would.
        await tx.$queryRaw`select (${deliverJobSql(id, delivery.webhookId, row.attempts + 1, null)}).id`;
      }
      await tx.$executeRaw`update webhook_deliveries set retry_requested_at = ${now}::timestamp(3), updated_at = ${now}::timestamp(3) where id = ${id}`;
    }
    await recordAudit(
      ctx,
      {
        action: 'webhook.retry',
        organizationId: delivery.webhook.organizationId,
        targetType: 'webhook_delivery',
        targetId: id,
      },
      tx,
    );
    return tx.webhookDelivery.findUniqueOrThrow({ where: { id }, include: deliveryDetail });
  });
}
