// The signed-in user's connected apps: remembered consents, when each was last used, and revoking one
// (which ends every token of that app for the user).
import type { Context } from '../../context.ts';
import { NotFoundError, UnauthenticatedError } from '../../errors/index.ts';
import { requireUserId } from '../../auth/access.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { describeConsentRequest, decideConsent, type BrowserSession } from './authorize.service.ts';
import { revokeGrant } from './tokens.service.ts';

export async function browserSession(ctx: Context): Promise<BrowserSession> {
  const actor = ctx.actor;
  if (actor?.kind !== 'user') throw new UnauthenticatedError('Sign in first');
  const session = await ctx.db.session.findUniqueOrThrow({ where: { id: actor.sessionId }, select: { authTime: true } });
  return { userId: actor.userId, sessionId: actor.sessionId, authTime: session.authTime };
}

export async function consentPrompt(ctx: Context, request: string) {
  return describeConsentRequest(ctx, request, (await browserSession(ctx)).userId);
}

export async function answerConsent(ctx: Context, request: string, approve: boolean) {
  return { redirectTo: await decideConsent(ctx, request, await browserSession(ctx), approve) };
}

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
  if (!consent) throw new NotFoundError('Connected app');
  await ctx.db.$transaction(async (tx) => {
    await tx.oAuthConsent.delete({ where: { id: consent.id } });
    const grants = await tx.oAuthGrant.findMany({ where: { userId, clientId: consent.clientId, revokedAt: null }, select: { id: true } });
    for (const g of grants) await revokeGrant(ctx, tx, g.id);
    await recordAudit(ctx, { action: 'oauth.consent.revoke', organizationId: consent.client.organizationId, targetType: 'oauth_client', targetId: consent.clientId }, tx);
  });
  return true;
}
