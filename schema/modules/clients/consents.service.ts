// The signed-in user's connected apps: remembered consents, when each was last used, and revoking one
// (which ends every token of that app for the user). The consent page itself is oauth/consent-page.service.ts.
import type { Context } from '../../context.ts';
import { requireUserId } from '../../auth/access.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { revokeGrant } from '../oauth/revocation.service.ts';
import { ConnectedAppNotFound } from './clients.errors.ts';

export async function connectedApps(ctx: Context) {
  const userId = requireUserId(ctx);
  return ctx.db.oAuthConsent.findMany({
    where: { userId },
    include: { client: { select: { clientId: true, name: true, description: true, organizationId: true } } },
    orderBy: { createdAt: 'asc' },
  });
}

export async function revokeConnectedApp(ctx: Context, clientId: string) {
  const userId = requireUserId(ctx);
  const consent = await ctx.db.oAuthConsent.findFirst({ where: { userId, client: { clientId } }, include: { client: true } });
  if (!consent) throw new ConnectedAppNotFound();
  await ctx.db.$transaction(async (tx) => {
    await tx.oAuthConsent.delete({ where: { id: consent.id } });
    const grants = await tx.oAuthGrant.findMany({ where: { userId, clientId: consent.clientId, revokedAt: null }, select: { id: true } });
    for (const g of grants) await revokeGrant(ctx, tx, g.id);
    await recordAudit(ctx, { action: 'oauth.consent.revoke', organizationId: consent.client.organizationId, targetType: 'oauth_client', targetId: consent.clientId }, tx);
  });
  return true;
}
