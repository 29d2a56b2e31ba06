// Routes under /api/v1/webhooks and /api/v1/event-types. Webhook records keep the interface's camelCase fields.
import { ValidationError } from '../../schema/errors/index.ts';
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { onlyFields, page, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const WEBHOOK_FIELDS = 'id organizationId url events description isActive failing failingSince createdAt updatedAt';
const ATTEMPT_FIELDS =
  'attempt manual startedAt durationMs success statusCode error requestHeaders responseHeaders responseBody';
const DELIVERY_FIELDS = `id webhookId eventId event status attemptCount nextAttemptAt statusCode deliveredAt timestamp requestBody createdAt attempts { ${ATTEMPT_FIELDS} }`;

const presentWebhook = (w: any) => ({
  id: w.id,
  organizationId: w.organizationId,
  url: w.url,
  events: w.events,
  description: w.description,
  isActive: w.isActive,
  failing: w.failing,
  failingSince: w.failingSince ?? null,
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
});
/** Creation and rotation only: the one time the secret is shown (an owner may reveal it again, audited). */
const presentWithSecret = (w: any) => ({ ...presentWebhook(w), secret: w.secret });

const presentAttempt = (a: any) => ({
  attempt: a.attempt,
  manual: a.manual,
  timestamp: a.startedAt,
  durationMs: a.durationMs,
  success: a.success,
  statusCode: a.statusCode ?? null,
  error: a.error ?? null,
  request: { headers: a.requestHeaders },
  response: a.statusCode === null ? null : { headers: a.responseHeaders ?? {}, body: a.responseBody ?? '' },
});

const presentDelivery = (d: any) => {
  const last = d.attempts[d.attempts.length - 1];
  return {
    id: d.id,
    webhookId: d.webhookId,
    eventId: d.eventId,
    event: d.event,
    status: d.status,
    timestamp: d.timestamp,
    deliveredAt: d.deliveredAt ?? null,
    nextAttemptAt: d.nextAttemptAt ?? null,
    attemptCount: d.attemptCount,
    statusCode: d.statusCode ?? null,
    responseTimeMs: last?.durationMs ?? null,
    request: { body: d.requestBody },
    response: last ? presentAttempt(last).response : null,
    attempts: d.attempts.map(presentAttempt),
  };
};

/** GraphQL would read a lone string as a one-item list; the REST body must send a list. */
function webhookInput(body: Record<string, unknown>, allowed: string[]) {
  const input = onlyFields(body, allowed);
  if ('events' in input && !Array.isArray(input.events))
    throw new ValidationError('The request is invalid', [{ path: 'events', message: 'must be a list of event kinds' }]);
  return input;
}

const MUTATION = (name: string, args: string, params: string, fields: string) =>
  `mutation(${args}) { ${name}(${params}) { __typename ... on ${fields} ${USER_ERROR_FIELDS} } }`;

const RETRY = MUTATION(
  'retryWebhookDelivery',
  '$id: ID!, $webhookId: ID',
  'id: $id, webhookId: $webhookId',
  `WebhookDelivery { ${DELIVERY_FIELDS} }`,
);

export const webhookRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/event-types',
    summary: 'The event catalog: every kind a webhook can subscribe to, with an example',
    operation: 'query { eventTypes { kind group lists description example } }',
    respond: (d) => ({ body: { event_types: d.eventTypes } }),
  },
  {
    method: 'GET',
    path: '/webhooks',
    summary: "The organization's webhooks (without their secrets)",
    operation: `query($org: String, $limit: Int, $cursor: String) { webhooks(organizationId: $org, limit: $limit, cursor: $cursor) { items { ${WEBHOOK_FIELDS} } nextCursor } }`,
    variables: ({ query }) => ({ org: query.organization_id, ...page(query) }),
    respond: (d) => ({ body: presentPage('webhooks', d.webhooks, presentWebhook) }),
  },
  {
    method: 'POST',
    path: '/webhooks',
    summary: 'Create a webhook; the answer carries its signing secret',
    operation: MUTATION(
      'createWebhook',
      '$input: CreateWebhookInput!',
      'input: $input',
      `Webhook { ${WEBHOOK_FIELDS} secret }`,
    ),
    variables: ({ body }) => ({ input: webhookInput(body, ['url', 'events', 'description', 'organizationId']) }),
    respond: (d) => ({ status: 201, body: presentWithSecret(unwrap(d.createWebhook)) }),
  },
  {
    method: 'GET',
    path: '/webhooks/:id',
    summary: 'One webhook (without its secret)',
    operation: `query($id: ID!) { webhook(id: $id) { ${WEBHOOK_FIELDS} } }`,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentWebhook(d.webhook) }),
  },
  {
    method: 'PATCH',
    path: '/webhooks/:id',
    summary: 'Change the URL, events or description, or activate or deactivate a webhook',
    operation: MUTATION(
      'updateWebhook',
      '$id: ID!, $input: UpdateWebhookInput!',
      'id: $id, input: $input',
      `Webhook { ${WEBHOOK_FIELDS} }`,
    ),
    variables: ({ params, body }) => ({
      id: params.id,
      input: webhookInput(body, ['url', 'events', 'description', 'isActive']),
    }),
    respond: (d) => ({ body: presentWebhook(unwrap(d.updateWebhook)) }),
  },
  {
    method: 'DELETE',
    path: '/webhooks/:id',
    summary: 'Delete a webhook and its delivery history',
    operation: MUTATION('deleteWebhook', '$id: ID!', 'id: $id', 'Webhook { id }'),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteWebhook), { status: 204 }),
  },
  {
    method: 'POST',
    path: '/webhooks/:id/rotate-secret',
    summary: 'Regenerate the signing secret; the old one stops signing at once',
    operation: MUTATION('rotateWebhookSecret', '$id: ID!', 'id: $id', `Webhook { ${WEBHOOK_FIELDS} secret }`),
    variables: ({ params, body }) => (onlyFields(body, []), { id: params.id }),
    respond: (d) => ({ body: presentWithSecret(unwrap(d.rotateWebhookSecret)) }),
  },
  {
    method: 'POST',
    path: '/webhooks/:id/reveal-secret',
    summary: "Show a webhook's current signing secret to an owner; the reveal is audited",
    operation: MUTATION('revealWebhookSecret', '$id: ID!', 'id: $id', 'WebhookSecret { secret }'),
    variables: ({ params, body }) => (onlyFields(body, []), { id: params.id }),
    respond: (d) => ({ body: { secret: unwrap(d.revealWebhookSecret).secret } }),
  },
  {
    method: 'POST',
    path: '/webhooks/:id/test',
    summary: 'Send a test event of the chosen kind (its example data) to this webhook',
    operation: MUTATION(
      'sendTestWebhook',
      '$id: ID!, $event: String!',
      'id: $id, event: $event',
      `WebhookDelivery { ${DELIVERY_FIELDS} }`,
    ),
    variables: ({ params, body }) => {
      const { event } = onlyFields(body, ['event']);
      if (typeof event !== 'string')
        throw new ValidationError('The request is invalid', [{ path: 'event', message: 'is required: an event kind' }]);
      return { id: params.id, event };
    },
    respond: (d) => ({ status: 202, body: presentDelivery(unwrap(d.sendTestWebhook)) }),
  },
  {
    method: 'GET',
    path: '/webhooks/:id/deliveries',
    summary: "A webhook's deliveries, newest first, with every attempt",
    operation: `query($id: ID!, $limit: Int, $cursor: String) { webhookDeliveries(webhookId: $id, limit: $limit, cursor: $cursor) { items { ${DELIVERY_FIELDS} } nextCursor } }`,
    variables: ({ params, query }) => ({ id: params.id, ...page(query) }),
    respond: (d) => ({ body: presentPage('deliveries', d.webhookDeliveries, presentDelivery) }),
  },
  {
    method: 'POST',
    path: '/webhooks/deliveries/:deliveryId/retry',
    summary: 'Retry now: send a delivery whose last attempt failed again at once (one more attempt)',
    operation: RETRY,
    variables: ({ params, body }) => (onlyFields(body, []), { id: params.deliveryId }),
    respond: (d) => ({ status: 202, body: presentDelivery(unwrap(d.retryWebhookDelivery)) }),
  },
  {
    method: 'POST',
    path: '/webhooks/:id/deliveries/:deliveryId/retry',
    summary: "Retry now: send one of this webhook's deliveries whose last attempt failed again at once",
    operation: RETRY,
    variables: ({ params, body }) => (onlyFields(body, []), { id: params.deliveryId, webhookId: params.id }),
    respond: (d) => ({ status: 202, body: presentDelivery(unwrap(d.retryWebhookDelivery)) }),
  },
];
