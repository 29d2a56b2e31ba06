import { builder } from '../../builder.ts';
import {
  organizationOverview,
  type GettingStarted,
  type OrganizationOverview,
  type PlatformCounts,
} from './overview.service.ts';

const GettingStartedRef = builder.objectRef<GettingStarted>('GettingStarted').implement({
  description: "A new organization's first steps, each true once real data shows it done.",
  fields: (t) => ({
    product: t.exposeBoolean('product', {
      nullable: true,
      description: 'The catalog has a product; null unless the caller is a platform admin.',
    }),
    oauthClient: t.exposeBoolean('oauthClient', { description: 'The organization has an OAuth client.' }),
    webhook: t.exposeBoolean('webhook', { description: 'The organization has a webhook.' }),
    invitation: t.exposeBoolean('invitation', {
      description: 'The organization has a second member, or has sent an invitation.',
    }),
  }),
});

const PlatformCountsRef = builder.objectRef<PlatformCounts>('PlatformCounts').implement({
  description: 'The size of the whole platform, for platform admins.',
  fields: (t) => ({
    organizations: t.exposeInt('organizations'),
    users: t.exposeInt('users'),
    products: t.exposeInt('products'),
  }),
});

const OrganizationOverviewRef = builder.objectRef<OrganizationOverview>('OrganizationOverview').implement({
  description: 'An organization at a glance: the counts of the admin dashboard.',
  fields: (t) => ({
    organizationId: t.exposeString('organizationId'),
    members: t.exposeInt('members'),
    activeSubscriptions: t.exposeInt('activeSubscriptions', {
      description: 'Active or trial, and not past their end date.',
    }),
    seatsUsed: t.exposeInt('seatsUsed', { description: 'Seats assigned across the active subscriptions.' }),
    seatsTotal: t.exposeInt('seatsTotal', { description: 'Seats bought across the active subscriptions.' }),
    oauthClients: t.exposeInt('oauthClients'),
    webhooks: t.exposeInt('webhooks'),
    failingWebhooks: t.exposeInt('failingWebhooks', {
      description: 'Webhooks whose last delivery failed every attempt, with nothing delivered since.',
    }),
    gettingStarted: t.field({ type: GettingStartedRef, resolve: (o) => o.gettingStarted }),
    platform: t.field({
      type: PlatformCountsRef,
      nullable: true,
      description: 'Platform-wide counts; null unless the caller is a platform admin.',
      resolve: (o) => o.platform,
    }),
  }),
});

builder.queryField('organizationOverview', (t) =>
  t.field({
    type: OrganizationOverviewRef,
    description: "The organization's counts and first steps, for its owners and admins (and platform admins).",
    authScopes: (_root, args) => ({ orgRole: { organizationId: args.organizationId, role: 'admin' } }),
    args: { organizationId: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => organizationOverview(ctx, args.organizationId),
  }),
);
