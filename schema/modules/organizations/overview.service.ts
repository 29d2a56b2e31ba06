// An organization at a glance, for the admin dashboard: what it holds, how far its setup has come, and for platform
// admins the size of the platform. Counts only, each one statement, all of them run at once.
import type { Context } from '../../context.ts';
import type { Prisma } from '../../db.ts';
import { isPlatformAdmin, requireOrgRole } from '../../auth/access.ts';

/** The first steps of a new organization, each done once real data shows it. */
export interface GettingStarted {
  /** The catalog has a product; null for anyone but a platform admin, who alone writes the catalog. */
  product: boolean | null;
  oauthClient: boolean;
  webhook: boolean;
  /** A second member, or an invitation sent (whatever became of it). */
  invitation: boolean;
}

export interface PlatformCounts {
  organizations: number;
  users: number;
  products: number;
}

export interface OrganizationOverview {
  organizationId: string;
  members: number;
  /** Active or trial, and not past its end date: the subscriptions that grant licenses. */
  activeSubscriptions: number;
  /** Seats assigned, and seats bought, across the active subscriptions. */
  seatsUsed: number;
  seatsTotal: number;
  oauthClients: number;
  webhooks: number;
  /** Webhooks whose last delivery failed all its attempts, with nothing delivered since. */
  failingWebhooks: number;
  gettingStarted: GettingStarted;
  /** Platform-wide counts, for platform admins only; null for everyone else. */
  platform: PlatformCounts | null;
}

/** A subscription that grants licenses now (licenses.service.ts asks the same in SQL). */
const live = (now: Date): Prisma.SubscriptionWhereInput => ({
  status: { in: ['active', 'trial'] },
  OR: [{ endDate: null }, { endDate: { gt: now } }],
});

async function platformCounts(ctx: Context): Promise<PlatformCounts> {
  const [organizations, users, products] = await Promise.all([
    ctx.db.organization.count(),
    ctx.db.user.count(),
    ctx.db.product.count(),
  ]);
  return { organizations, users, products };
}

/** The overview of an organization its admins (and platform admins) may see; anyone else is told it does not exist. */
export async function organizationOverview(ctx: Context, organizationId: string): Promise<OrganizationOverview> {
  await requireOrgRole(ctx, organizationId, 'admin');
  const platformAdmin = await isPlatformAdmin(ctx);
  const subscriptions = live(ctx.clock.now());
  const [owned, failingWebhooks, subscribed, seatsUsed, platform] = await Promise.all([
    ctx.db.organization.findUniqueOrThrow({
      where: { id: organizationId },
      select: {
        _count: {
          select: {
            memberships: true,
            invitations: true,
            // The clients the organization registered: Tessera's own command-line client is not one (cli-client.ts).
            oauthClients: { where: { platformWide: false, metadataDocument: false } },
            webhooks: true,
          },
        },
      },
    }),
    ctx.db.webhook.count({ where: { organizationId, failingSince: { not: null } } }),
    ctx.db.subscription.aggregate({
      where: { organizationId, ...subscriptions },
      _count: { _all: true },
      _sum: { totalSeats: true },
    }),
    ctx.db.seatAssignment.count({ where: { organizationId, subscription: subscriptions } }),
    platformAdmin ? platformCounts(ctx) : null,
  ]);
  const counts = owned._count;
  return {
    organizationId,
    members: counts.memberships,
    activeSubscriptions: subscribed._count._all,
    seatsUsed,
    seatsTotal: subscribed._sum.totalSeats ?? 0,
    oauthClients: counts.oauthClients,
    webhooks: counts.webhooks,
    failingWebhooks,
    gettingStarted: {
      product: platform ? platform.products > 0 : null,
      oauthClient: counts.oauthClients > 0,
      webhook: counts.webhooks > 0,
      invitation: counts.memberships > 1 || counts.invitations > 0,
    },
    platform,
  };
}
