// Step 12: consent, unless the client does not ask for it or the user already allowed every scope asked for
// (prompt=consent asks again). With prompt=none, consent_required instead of the page.
import type { Context } from '../../../context.ts';
import { ConsentRequired } from '../oauth.errors.ts';
import { signConsentRequest } from './consent-request.ts';
import type { AuthorizationRequest, AuthorizeClient, AuthorizeOutcome, BrowserSession } from './request.ts';

export async function requireConsent(
  ctx: Context,
  client: AuthorizeClient,
  request: AuthorizationRequest,
  session: BrowserSession,
  consentScopes: string[] | null,
): Promise<Extract<AuthorizeOutcome, { kind: 'consent' }> | null> {
  const remembered = consentScopes !== null && request.scope.every((s) => consentScopes.includes(s));
  if (!request.prompt.includes('consent') && (!client.consentRequired || remembered)) return null;
  if (request.prompt.includes('none')) throw new ConsentRequired();
  return { kind: 'consent', request: await signConsentRequest(ctx, request, session, client.organizationId) };
}
