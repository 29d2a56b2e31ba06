// The signed-in user's connected apps: remembered consents, when each was last used, and revoking one
// (which ends every token of that app for the user). An app that asks no consent (a marketplace app its
// organization installed, a first-party client) has no consent to remember: it is listed by its live grants, so that
// the person can still see and end its access. The consent page itself is oauth/consent-page.service.ts.
import type { Context } from '../../context.ts';
import { requireUserId } from '../../auth/access.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { revokeGrants } from '../oauth/revocation.service.ts';
import { ConnectedAppNotFound } from './clients.errors.ts';

const appClient = { select: { clientId: true, name: true, description: true, organizationId: true } } as const;

export async function connectedApps(ctx: Context) {
  const userId = requireUserId(ctx);
  const consents = await ctx.db.oAuthConsent.findMany({
    where: { userId },
    include: { client: appClient },
    orderBy: { createdAt: 'asc' },
  });
  // The newest live grant of each other client: its scopes, and when the person last authorized it.
  const granted = await ctx.db.oAuthGrant.findMany({
    where: { userId, revokedAt: null, clientId: { notIn: consents.map((c) => c.clientId) } },
    distinct: ['clientId'],
    orderBy: [{ clientId: 'asc' }, { createdAt: 'desc' }],
    include: { client: appClient },
  });
  const unconsented = granted.map((g) => ({
    client: g.client,
    scopes: g.scope.split(' ').filter(Boolean),
    createdAt: g.createdAt,
    lastUsedAt: g.createdAt,
  }));
  return [...consents, ...unconsented];
}

export async function revokeConnectedApp(ctx: Context, clientId: string) {
  const userId = requireUserId(ctx);
  const client = await ctx.db.oAuthClient.findUnique({
    where: { clientId },
    select: { id: true, organizationId: true },
  });
  const consent =
    client &&
    (await ctx.db.oAuthConsent.findUnique({
      where: { userId_clientId: { userId, clientId: client.id } },
      select: { id: true },
    }));
  const live = client && (await ctx.db.oAuthGrant.count({ where: { userId, clientId: client.id, revokedAt: null } }));
  if (!client || (!consent && !live)) throw new ConnectedAppNotFound();
  await ctx.db.$transaction(async (tx) => {
    if (consent) await tx.oAuthConsent.deleteMany({ where: { id: consent.id } });
    await revokeGrants(ctx, tx, { userId, clientId: client.id });
    await recordAudit(
      ctx,
      {
        action: 'oauth.consent.revoke',
        organizationId: client.organizationId,
        targetType: 'oauth_client',
        targetId: client.id,
      },
      tx,
    );
  });
  return true;
}
