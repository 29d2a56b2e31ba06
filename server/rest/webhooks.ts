// Routes under /api/v1/webhooks and /api/v1/event-types. Webhook records keep the interface's camelCase fields.
import { ValidationError } from '../../schema/errors/index.ts';
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { onlyFields, page, route, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const WEBHOOK_FIELDS = graphql(
  `fragment WebhookFields on Webhook { id organizationId url events description isActive failing failingSince createdAt updatedAt }`,
);
/** Creation and rotation only: the one time the secret is shown (an owner may reveal it again, audited). */
const WITH_SECRET_FIELDS = graphql(`fragment WebhookWithSecretFields on Webhook { ...WebhookFields secret }`, [
  WEBHOOK_FIELDS,
]);
const ATTEMPT_FIELDS = graphql(
  `fragment AttemptFields on WebhookAttempt { attempt manual startedAt durationMs success statusCode error requestHeaders responseHeaders responseBody }`,
);
const DELIVERY_FIELDS = graphql(
  `fragment DeliveryFields on WebhookDelivery { id webhookId eventId event status attemptCount nextAttemptAt statusCode deliveredAt timestamp requestBody createdAt attempts { ...AttemptFields } }`,
  [ATTEMPT_FIELDS],
);

const presentWebhook = (w: ResultOf<typeof WEBHOOK_FIELDS>) => ({
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
const presentWithSecret = (w: ResultOf<typeof WITH_SECRET_FIELDS>) => ({ ...presentWebhook(w), secret: w.secret });

const presentAttempt = (a: ResultOf<typeof ATTEMPT_FIELDS>) => ({
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

const presentDelivery = (d: ResultOf<typeof DELIVERY_FIELDS>) => {
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

const RETRY = graphql(
  `mutation($id: ID!, $webhookId: ID) { retryWebhookDelivery(id: $id, webhookId: $webhookId) { __typename ...DeliveryFields ...UserErrorFields } }`,
  [DELIVERY_FIELDS, USER_ERROR_FIELDS],
);

export const webhookRoutes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/event-types',
    summary: 'The event catalog: every kind a webhook can subscribe to, with an example',
    operation: graphql(`query { eventTypes { kind group lists description example } }`),
    respond: (d) => ({ body: { event_types: d.eventTypes } }),
  }),
  route({
    method: 'GET',
    path: '/webhooks',
    summary: "The organization's webhooks (without their secrets)",
    operation: graphql(
      `query($org: String, $limit: Int, $cursor: String) { webhooks(organizationId: $org, limit: $limit, cursor: $cursor) { items { ...WebhookFields } nextCursor } }`,
      [WEBHOOK_FIELDS],
    ),
    variables: ({ query }) => ({ org: query.organization_id, ...page(query) }),
    respond: (d) => ({ body: presentPage('webhooks', d.webhooks, presentWebhook) }),
  }),
  route({
    method: 'POST',
    path: '/webhooks',
    summary: 'Create a webhook; the answer carries its signing secret',
    operation: graphql(
      `mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { __typename ...WebhookWithSecretFields ...UserErrorFields } }`,
      [WITH_SECRET_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: webhookInput(body, ['url', 'events', 'description', 'organizationId']) }),
    respond: (d) => ({ status: 201, body: presentWithSecret(unwrap(d.createWebhook)) }),
  }),
  route({
    method: 'GET',
    path: '/webhooks/:id',
    summary: 'One webhook (without its secret)',
    operation: graphql(`query($id: ID!) { webhook(id: $id) { ...WebhookFields } }`, [WEBHOOK_FIELDS]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentWebhook(d.webhook) }),
  }),
  route({
    method: 'PATCH',
    path: '/webhooks/:id',
    summary: 'Change the URL, events or description, or activate or deactivate a webhook',
    operation: graphql(
      `mutation($id: ID!, $input: UpdateWebhookInput!) { updateWebhook(id: $id, input: $input) { __typename ...WebhookFields ...UserErrorFields } }`,
      [WEBHOOK_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({
      id: params.id,
      input: webhookInput(body, ['url', 'events', 'description', 'isActive']),
    }),
    respond: (d) => ({ body: presentWebhook(unwrap(d.updateWebhook)) }),
  }),
  route({
    method: 'DELETE',
    path: '/webhooks/:id',
    summary: 'Delete a webhook and its delivery history',
    operation: graphql(
      `mutation($id: ID!) { deleteWebhook(id: $id) { __typename ... on Webhook { id } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteWebhook), { status: 204 }),
  }),
  route({
    method: 'POST',
    path: '/webhooks/:id/rotate-secret',
    summary: 'Regenerate the signing secret; the old one stops signing at once',
    operation: graphql(
      `mutation($id: ID!) { rotateWebhookSecret(id: $id) { __typename ...WebhookWithSecretFields ...UserErrorFields } }`,
      [WITH_SECRET_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => (onlyFields(body, []), { id: params.id }),
    respond: (d) => ({ body: presentWithSecret(unwrap(d.rotateWebhookSecret)) }),
  }),
  route({
    method: 'POST',
    path: '/webhooks/:id/reveal-secret',
    summary: "Show a webhook's current signing secret to an owner; the reveal is audited",
    operation: graphql(
      `mutation($id: ID!) { revealWebhookSecret(id: $id) { __typename ... on WebhookSecret { secret } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => (onlyFields(body, []), { id: params.id }),
    respond: (d) => ({ body: { secret: unwrap(d.revealWebhookSecret).secret } }),
  }),
  route({
    method: 'POST',
    path: '/webhooks/:id/test',
    summary: 'Send a test event of the chosen kind (its example data) to this webhook',
    operation: graphql(
      `mutation($id: ID!, $event: String!) { sendTestWebhook(id: $id, event: $event) { __typename ...DeliveryFields ...UserErrorFields } }`,
      [DELIVERY_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => {
      const { event } = onlyFields(body, ['event']);
      if (typeof event !== 'string')
        throw new ValidationError('The request is invalid', [{ path: 'event', message: 'is required: an event kind' }]);
      return { id: params.id, event };
    },
    respond: (d) => ({ status: 202, body: presentDelivery(unwrap(d.sendTestWebhook)) }),
  }),
  route({
    method: 'GET',
    path: '/webhooks/:id/deliveries',
    summary: "A webhook's deliveries, newest first, with every attempt",
    operation: graphql(
      `query($id: ID!, $limit: Int, $cursor: String) { webhookDeliveries(webhookId: $id, limit: $limit, cursor: $cursor) { items { ...DeliveryFields } nextCursor } }`,
      [DELIVERY_FIELDS],
    ),
    variables: ({ params, query }) => ({ id: params.id, ...page(query) }),
    respond: (d) => ({ body: presentPage('deliveries', d.webhookDeliveries, presentDelivery) }),
  }),
  route({
    method: 'POST',
    path: '/webhooks/deliveries/:deliveryId/retry',
    summary: 'Retry now: send a delivery whose last attempt failed again at once (one more attempt)',
    operation: RETRY,
    variables: ({ params, body }) => (onlyFields(body, []), { id: params.deliveryId }),
    respond: (d) => ({ status: 202, body: presentDelivery(unwrap(d.retryWebhookDelivery)) }),
  }),
  route({
    method: 'POST',
    path: '/webhooks/:id/deliveries/:deliveryId/retry',
    summary: "Retry now: send one of this webhook's deliveries whose last attempt failed again at once",
    operation: RETRY,
    variables: ({ params, body }) => (onlyFields(body, []), { id: params.deliveryId, webhookId: params.id }),
    respond: (d) => ({ status: 202, body: presentDelivery(unwrap(d.retryWebhookDelivery)) }),
  }),
];
