import { builder } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { pageType } from '../../page-type.ts';
import {
  createWebhook,
  deleteWebhook,
  eventTypes,
  getWebhook,
  listDeliveries,
  listWebhooks,
  retryDelivery,
  revealWebhookSecret,
  rotateWebhookSecret,
  sendTestEvent,
  updateWebhook,
} from './webhooks.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { WEBHOOKS_ERROR_CODES } from './webhooks.errors.ts';

const refusals = mutationErrors('WebhooksErrorCode', WEBHOOKS_ERROR_CODES);

type EventTypeRow = ReturnType<typeof eventTypes>[number];
const EventTypeRef = builder.objectRef<EventTypeRow>('EventType').implement({
  description: 'A kind of the event catalog: what webhooks can subscribe to.',
  fields: (t) => ({
    kind: t.exposeString('kind'),
    group: t.exposeString('group'),
    lists: t.stringList({
      description: 'The interface lists (A, B) that name this kind.',
      resolve: (e) => [...e.lists],
    }),
    description: t.exposeString('description'),
    example: t.field({ type: 'JSON', description: 'An example of its `data`.', resolve: (e) => e.example }),
  }),
});

const WebhookRef = builder.prismaObject('Webhook', {
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId'),
    url: t.exposeString('url'),
    events: t.exposeStringList('events'),
    description: t.exposeString('description'),
    isActive: t.exposeBoolean('isActive'),
    failing: t.boolean({
      description: 'All five attempts of a delivery failed, and nothing succeeded since.',
      resolve: (w) => w.failingSince !== null,
    }),
    failingSince: t.expose('failingSince', { type: 'DateTime', nullable: true }),
    secret: t.string({
      nullable: true,
      description:
        'The signing secret (whsec_...), in the answer of createWebhook and rotateWebhookSecret only; null everywhere else. ' +
        'Never editable, only regenerated; an owner reads it again with revealWebhookSecret (audited).',
      // Only creation and rotation hand the service a webhook with its secret in clear (WebhookWithSecret).
      resolve: (w) => ('secret' in w && typeof w.secret === 'string' ? w.secret : null),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const WebhookSecretRef = builder.objectRef<Awaited<ReturnType<typeof revealWebhookSecret>>>('WebhookSecret').implement({
  description: "A webhook's signing secret, revealed to an owner.",
  fields: (t) => ({
    webhookId: t.exposeID('webhookId'),
    secret: t.exposeString('secret', { description: 'whsec_ and the base64 of 32 random bytes.' }),
  }),
});

type Delivery = Awaited<ReturnType<typeof listDeliveries>>['items'][number];
type Attempt = Delivery['attemptLog'][number];

const WebhookAttemptRef = builder.objectRef<Attempt>('WebhookAttempt').implement({
  fields: (t) => ({
    attempt: t.exposeInt('attempt'),
    startedAt: t.expose('startedAt', { type: 'DateTime' }),
    durationMs: t.exposeInt('durationMs'),
    success: t.exposeBoolean('success'),
    statusCode: t.exposeInt('statusCode', { nullable: true }),
    error: t.exposeString('error', { nullable: true }),
    requestHeaders: t.field({ type: 'JSON', resolve: (a) => a.requestHeaders }),
    responseHeaders: t.field({ type: 'JSON', nullable: true, resolve: (a) => a.responseHeaders }),
    responseBody: t.exposeString('responseBody', { nullable: true, description: 'The first 4 KB of the answer.' }),
    manual: t.exposeBoolean('manual', {
      description: 'Asked for by an admin (Retry now), outside the retry schedule.',
    }),
  }),
});

const WebhookDeliveryRef = builder.objectRef<Delivery>('WebhookDelivery').implement({
  description: 'One event for one webhook, with every attempt. The request body is the same bytes on every attempt.',
  fields: (t) => ({
    id: t.exposeID('id'),
    webhookId: t.exposeString('webhookId'),
    eventId: t.exposeString('eventId'),
    event: t.exposeString('kind'),
    status: t.exposeString('status', { description: 'pending, delivered or failed' }),
    attemptCount: t.exposeInt('attempts'),
    nextAttemptAt: t.expose('nextAttemptAt', { type: 'DateTime', nullable: true }),
    statusCode: t.exposeInt('lastStatusCode', { nullable: true }),
    deliveredAt: t.expose('deliveredAt', { type: 'DateTime', nullable: true }),
    timestamp: t.field({
      type: 'DateTime',
      description: 'When the event happened.',
      resolve: (d) => d.event.createdAt,
    }),
    requestBody: t.string({ resolve: (d) => d.event.body }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    attempts: t.field({ type: [WebhookAttemptRef], resolve: (d) => d.attemptLog }),
  }),
});

const CreateWebhookInput = builder.inputType('CreateWebhookInput', {
  fields: (t) => ({
    url: t.string({ required: true, description: 'https only; it must not resolve to a private address.' }),
    events: t.stringList({ required: true, description: 'Kinds from eventTypes.' }),
    description: t.string(),
    organizationId: t.string({ description: "Defaults to the caller's current organization." }),
  }),
});

const UpdateWebhookInput = builder.inputType('UpdateWebhookInput', {
  fields: (t) => ({ url: t.string(), events: t.stringList(), description: t.string(), isActive: t.boolean() }),
});

builder.queryField('eventTypes', (t) =>
  t.field({ type: [EventTypeRef], authScopes: { authenticated: true }, resolve: () => eventTypes() }),
);

builder.queryField('webhooks', (t) =>
  t.field({
    type: pageType('WebhookPage', WebhookRef),
    authScopes: { authenticated: true },
    args: { organizationId: t.arg.string(), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { organizationId, ...page }, ctx) => listWebhooks(ctx, organizationId, page),
  }),
);

builder.queryField('webhook', (t) =>
  t.field({
    type: WebhookRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => getWebhook(ctx, String(id)),
  }),
);

builder.queryField('webhookDeliveries', (t) =>
  t.field({
    type: pageType('WebhookDeliveryPage', WebhookDeliveryRef),
    authScopes: { authenticated: true },
    args: { webhookId: t.arg.id({ required: true }), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { webhookId, ...page }, ctx) => listDeliveries(ctx, String(webhookId), page),
  }),
);

builder.mutationField('createWebhook', (t) =>
  t.field({
    description:
      'At most WEBHOOK_LIMIT_PER_ORGANIZATION (20) per organization: past it, a UserError with code conflict.',
    errors: refusals,
    type: WebhookRef,
    authScopes: firstParty(),
    args: { input: t.arg({ type: CreateWebhookInput, required: true }) },
    resolve: (_root, { input }, ctx) => createWebhook(ctx, input),
  }),
);

builder.mutationField('updateWebhook', (t) =>
  t.field({
    errors: refusals,
    type: WebhookRef,
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateWebhookInput, required: true }) },
    resolve: (_root, { id, input }, ctx) => updateWebhook(ctx, String(id), input),
  }),
);

builder.mutationField('deleteWebhook', (t) =>
  t.field({
    errors: refusals,
    type: WebhookRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => deleteWebhook(ctx, String(id)),
  }),
);

builder.mutationField('rotateWebhookSecret', (t) =>
  t.field({
    errors: refusals,
    type: WebhookRef,
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => rotateWebhookSecret(ctx, String(id)),
  }),
);

builder.mutationField('revealWebhookSecret', (t) =>
  t.field({
    description:
      "The current signing secret, for the organization's owners (and platform admins), never an OAuth access token; each reveal is audited (webhook.secret.reveal).",
    errors: refusals,
    type: WebhookSecretRef,
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => revealWebhookSecret(ctx, String(id)),
  }),
);

builder.mutationField('sendTestWebhook', (t) =>
  t.field({
    errors: refusals,
    type: WebhookDeliveryRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), event: t.arg.string({ required: true }) },
    resolve: (_root, { id, event }, ctx) => sendTestEvent(ctx, String(id), event),
  }),
);

builder.mutationField('retryWebhookDelivery', (t) =>
  t.field({
    description:
      'Retry now: one more attempt, made at once, of a delivery whose last attempt failed (pending with failures, or failed). ' +
      'Its success ends the delivery; its failure leaves the scheduled attempts as they were. A UserError with code conflict for a ' +
      'delivered delivery, one not attempted yet, one already being retried or whose attempt is being made, or an inactive webhook.',
    errors: refusals,
    type: WebhookDeliveryRef,
    authScopes: { authenticated: true },
    args: {
      id: t.arg.id({ required: true }),
      webhookId: t.arg.id({ description: 'The webhook the delivery must belong to (not found otherwise).' }),
    },
    resolve: (_root, { id, webhookId }, ctx) =>
      retryDelivery(ctx, String(id), webhookId == null ? null : String(webhookId)),
  }),
);
