// The consent page (/consent) over GraphQL: what it shows and the user's answer, for the signed-in browser
// session. The authorization endpoint sent the browser there with a signed request (authorize/consent-request.ts).
import type { Context } from '../../context.ts';
import { UnauthenticatedError } from '../../errors/index.ts';
import { describeConsentRequest, decideConsent, type BrowserSession } from './authorize.service.ts';

export async function browserSession(ctx: Context): Promise<BrowserSession> {
  const actor = ctx.actor;
  if (actor?.kind !== 'user') throw new UnauthenticatedError('Sign in first');
  const session = await ctx.db.session.findUniqueOrThrow({
    where: { id: actor.sessionId },
    select: { authTime: true, amr: true, connectionId: true },
  });
  return { userId: actor.userId, sessionId: actor.sessionId, ...session };
}

export async function consentPrompt(ctx: Context, request: string) {
  return describeConsentRequest(ctx, request, (await browserSession(ctx)).userId);
}

export async function answerConsent(ctx: Context, request: string, approve: boolean) {
  return { redirectTo: await decideConsent(ctx, request, await browserSession(ctx), approve) };
}
