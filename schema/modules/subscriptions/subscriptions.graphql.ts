import { builder } from '../../builder.ts';
import { present } from '../../lib/input.ts';
import { pageType } from '../../page-type.ts';
import { ProductRef } from '../products/products.graphql.ts';
import { OrganizationSummaryRef } from '../organizations/organizations.graphql.ts';
import { BILLING_CYCLES, SUBSCRIPTION_STATUSES, type SubscriptionView } from './subscriptions.service.ts';
import {
  cancelSubscription,
  createSubscription,
  getSubscription,
  listSubscriptions,
  updateSubscription,
} from './subscriptions.service.ts';
import { assignSeat, listSeats, unassignSeat } from './seats.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { SUBSCRIPTIONS_ERROR_CODES } from './subscriptions.errors.ts';

const refusals = mutationErrors('SubscriptionsErrorCode', SUBSCRIPTIONS_ERROR_CODES);

const SubscriptionStatusEnum = builder.enumType('SubscriptionStatus', { values: SUBSCRIPTION_STATUSES });
const BillingCycleEnum = builder.enumType('BillingCycle', { values: BILLING_CYCLES });

export const SubscriptionRef = builder.objectRef<SubscriptionView>('Subscription').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId'),
    organization: t.field({ type: OrganizationSummaryRef, resolve: (s) => s.organization }),
    productId: t.exposeString('productId'),
    product: t.field({ type: ProductRef, resolve: (s) => s.product }),
    totalSeats: t.exposeInt('totalSeats'),
    assignedSeats: t.exposeInt('assignedSeats'),
    pricePerSeat: t.string({
      description: 'Exact decimal text with two decimals, e.g. "19.99".',
      resolve: (s) => s.pricePerSeat.toFixed(2),
    }),
    billingCycle: t.expose('billingCycle', { type: BillingCycleEnum }),
    status: t.expose('status', { type: SubscriptionStatusEnum }),
    endDate: t.expose('endDate', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

type Seat = Awaited<ReturnType<typeof assignSeat>>;
const SeatUserRef = builder.objectRef<Seat['user']>('SeatUser').implement({
  fields: (t) => ({ id: t.exposeID('id'), email: t.exposeString('email'), name: t.exposeString('name') }),
});
const SeatRef = builder.objectRef<Seat>('Seat').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    subscriptionId: t.exposeString('subscriptionId'),
    userId: t.exposeString('userId'),
    user: t.field({ type: SeatUserRef, resolve: (s) => s.user }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const CreateSubscriptionInput = builder.inputType('CreateSubscriptionInput', {
  fields: (t) => ({
    organizationId: t.string({ required: true }),
    productId: t.string({ required: true }),
    totalSeats: t.int({ required: true }),
    pricePerSeat: t.string({ required: true, description: 'Exact decimal, at most 2 decimals: "19.99".' }),
    billingCycle: t.field({ type: BillingCycleEnum, required: true }),
    status: t.field({ type: SubscriptionStatusEnum, description: 'Defaults to active.' }),
    endDate: t.field({ type: 'DateTime' }),
  }),
});
const UpdateSubscriptionInput = builder.inputType('UpdateSubscriptionInput', {
  fields: (t) => ({
    totalSeats: t.int({ description: 'Never below the assigned seats (conflict).' }),
    pricePerSeat: t.string(),
    billingCycle: t.field({ type: BillingCycleEnum }),
    status: t.field({ type: SubscriptionStatusEnum, description: 'cancelled cancels; the record stays.' }),
    endDate: t.field({ type: 'DateTime', description: 'null removes the end date.' }),
  }),
});

builder.queryField('subscriptions', (t) =>
  t.field({
    type: pageType('SubscriptionPage', SubscriptionRef),
    description: "Every organization's for platform admins, else those of the caller's organizations; oldest first.",
    authScopes: { authenticated: true },
    args: {
      organizationId: t.arg.string(),
      productId: t.arg.string(),
      status: t.arg({ type: SubscriptionStatusEnum }),
      limit: t.arg.int(),
      cursor: t.arg.string(),
    },
    resolve: (_root, { limit, cursor, ...filters }, ctx) =>
      listSubscriptions(ctx, present(filters), present({ limit, cursor })),
  }),
);

builder.queryField('subscription', (t) =>
  t.field({
    type: SubscriptionRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => getSubscription(ctx, String(args.id)),
  }),
);

builder.queryField('subscriptionSeats', (t) =>
  t.field({
    type: pageType('SeatPage', SeatRef),
    description: "A subscription's assigned seats (the organization's admins).",
    authScopes: { authenticated: true },
    args: { subscriptionId: t.arg.id({ required: true }), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { subscriptionId, ...page }, ctx) => listSeats(ctx, String(subscriptionId), present(page)),
  }),
);

builder.mutationField('createSubscription', (t) =>
  t.field({
    errors: refusals,
    type: SubscriptionRef,
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: CreateSubscriptionInput, required: true }) },
    resolve: (_root, { input }, ctx) => createSubscription(ctx, present(input)),
  }),
);

builder.mutationField('updateSubscription', (t) =>
  t.field({
    errors: refusals,
    type: SubscriptionRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateSubscriptionInput, required: true }) },
    resolve: (_root, args, ctx) => updateSubscription(ctx, String(args.id), present(args.input)),
  }),
);

builder.mutationField('cancelSubscription', (t) =>
  t.field({
    errors: refusals,
    type: SubscriptionRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => cancelSubscription(ctx, String(args.id)),
  }),
);

builder.mutationField('assignSeat', (t) =>
  t.field({
    errors: refusals,
    type: SeatRef,
    authScopes: { authenticated: true },
    args: { subscriptionId: t.arg.id({ required: true }), userId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      assignSeat(ctx, { subscriptionId: String(args.subscriptionId), userId: String(args.userId) }),
  }),
);

builder.mutationField('unassignSeat', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    authScopes: { authenticated: true },
    args: { subscriptionId: t.arg.id({ required: true }), userId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      unassignSeat(ctx, { subscriptionId: String(args.subscriptionId), userId: String(args.userId) }),
  }),
);
