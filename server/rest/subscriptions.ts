// Routes for subscriptions (the same table under /v1 and /api/v1) and their seats (/api/v1). Fields are
// snake_case; price_per_seat travels as a JSON number and is handed to the schema as exact decimal text.
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, onlyFields, page, route, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const SUBSCRIPTION_FIELDS = graphql(
  `fragment SubscriptionFields on Subscription { id organizationId productId totalSeats assignedSeats pricePerSeat billingCycle status endDate createdAt updatedAt }`,
);
const SEAT_FIELDS = graphql(
  `fragment SeatFields on Seat { id subscriptionId userId createdAt user { id email name } }`,
);

export const presentSubscription = (s: ResultOf<typeof SUBSCRIPTION_FIELDS>) => ({
  id: s.id,
  organization_id: s.organizationId,
  product_id: s.productId,
  total_seats: s.totalSeats,
  assigned_seats: s.assignedSeats,
  price_per_seat: Number(s.pricePerSeat),
  billing_cycle: s.billingCycle,
  status: s.status,
  end_date: s.endDate ?? null,
  created_at: s.createdAt,
  updated_at: s.updatedAt,
});

export const presentSeat = (s: ResultOf<typeof SEAT_FIELDS>) => ({
  id: s.id,
  subscription_id: s.subscriptionId,
  user_id: s.userId,
  user: s.user,
  assigned_at: s.createdAt,
});

const UPDATE = ['total_seats', 'price_per_seat', 'billing_cycle', 'status', 'end_date'];
const CREATE = ['organization_id', 'product_id', ...UPDATE];

/**
 * A JSON number becomes its shortest decimal text (19.99 -> "19.99"); the schema checks the amount. end_date goes
 * as it came: the DateTime scalar reads it by the one rule for timestamps and refuses anything but such a string.
 */
function money(input: Record<string, unknown>) {
  return typeof input.pricePerSeat === 'number' ? { ...input, pricePerSeat: String(input.pricePerSeat) } : input;
}

export const subscriptionRoutes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/subscriptions',
    summary: 'Subscriptions, filtered by organization, product and status',
    operation: graphql(
      `query($org: String, $product: String, $status: SubscriptionStatus, $limit: Int, $cursor: String) { subscriptions(organizationId: $org, productId: $product, status: $status, limit: $limit, cursor: $cursor) { items { ...SubscriptionFields } nextCursor } }`,
      [SUBSCRIPTION_FIELDS],
    ),
    variables: ({ query }) => ({
      org: query.organization_id,
      product: query.product_id,
      status: query.status,
      ...page(query),
    }),
    respond: (d) => ({ body: presentPage('subscriptions', d.subscriptions, presentSubscription) }),
  }),
  route({
    method: 'POST',
    path: '/subscriptions',
    summary: 'Create a subscription for an organization (platform admins)',
    operation: graphql(
      `mutation($input: CreateSubscriptionInput!) { createSubscription(input: $input) { __typename ...SubscriptionFields ...UserErrorFields } }`,
      [SUBSCRIPTION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: money(fromBody(body, CREATE)) }),
    respond: (d) => ({ status: 201, body: presentSubscription(unwrap(d.createSubscription)) }),
  }),
  route({
    method: 'GET',
    path: '/subscriptions/:id',
    summary: 'One subscription',
    operation: graphql(`query($id: ID!) { subscription(id: $id) { ...SubscriptionFields } }`, [SUBSCRIPTION_FIELDS]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentSubscription(d.subscription) }),
  }),
  route({
    method: 'PATCH',
    path: '/subscriptions/:id',
    summary: 'Change seats, price, cycle, status or end date; status cancelled cancels (platform admins)',
    operation: graphql(
      `mutation($id: ID!, $input: UpdateSubscriptionInput!) { updateSubscription(id: $id, input: $input) { __typename ...SubscriptionFields ...UserErrorFields } }`,
      [SUBSCRIPTION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, input: money(fromBody(body, UPDATE)) }),
    respond: (d) => ({ body: presentSubscription(unwrap(d.updateSubscription)) }),
  }),
  route({
    method: 'DELETE',
    path: '/subscriptions/:id',
    summary: 'Cancel a subscription; the record stays (platform admins)',
    operation: graphql(
      `mutation($id: ID!) { cancelSubscription(id: $id) { __typename ...SubscriptionFields ...UserErrorFields } }`,
      [SUBSCRIPTION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentSubscription(unwrap(d.cancelSubscription)) }),
  }),
];

export const seatRoutes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/subscriptions/:id/seats',
    summary: "A subscription's assigned seats (the organization's admins)",
    operation: graphql(
      `query($id: ID!, $limit: Int, $cursor: String) { subscriptionSeats(subscriptionId: $id, limit: $limit, cursor: $cursor) { items { ...SeatFields } nextCursor } }`,
      [SEAT_FIELDS],
    ),
    variables: ({ params, query }) => ({ id: params.id, ...page(query) }),
    respond: (d) => ({ body: presentPage('seats', d.subscriptionSeats, presentSeat) }),
  }),
  route({
    method: 'POST',
    path: '/subscriptions/:id/seats',
    summary: "Give a member a seat (the organization's admins)",
    operation: graphql(
      `mutation($id: ID!, $user_id: ID!) { assignSeat(subscriptionId: $id, userId: $user_id) { __typename ...SeatFields ...UserErrorFields } }`,
      [SEAT_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, user_id: onlyFields(body, ['user_id']).user_id }),
    respond: (d) => ({ status: 201, body: presentSeat(unwrap(d.assignSeat)) }),
  }),
  route({
    method: 'DELETE',
    path: '/subscriptions/:id/seats/:user_id',
    summary: "Take a member's seat back (the organization's admins)",
    operation: graphql(
      `mutation($id: ID!, $user: ID!) { unassignSeat(subscriptionId: $id, userId: $user) { __typename ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id, user: params.user_id }),
    respond: (d) => (unwrap(d.unassignSeat), { status: 204 }),
  }),
];
