// Step 10: a fresh enough sign-in of the right user, with a second factor where one is asked for, or off to sign
// in; with prompt=none, login_required instead. A new sign-in is asked for by prompt=login, by a max_age the
// session is older than, by an id_token_hint of someone else, and by a second factor the session did not use
// when the request's acr_values prefer one (and the person has one) or the client's organization requires one
// (docs/architecture.md#second-factors). A person the organization requires a factor of who has none is sent
// to set one up.
import type { Context } from '../../../context.ts';
import { ACR_MFA } from '../acr.ts';
import { LoginRequired } from '../oauth.errors.ts';
import type { AuthorizationRequest, AuthorizeOutcome, BrowserSession } from './request.ts';

type LoginOutcome = Extract<AuthorizeOutcome, { kind: 'login' }>;

export interface SecondFactorNeeds {
  /** The client's organization requires a second factor. */
  requireMfa: boolean;
  /** The session's person has a second factor. */
  hasFactor: boolean;
}

export function requireLogin(
  ctx: Context,
  request: AuthorizationRequest,
  session: BrowserSession | null,
  hintedSubject: string | null,
  params: Record<string, string>,
  factors: SecondFactorNeeds,
): LoginOutcome | null {
  // In milliseconds: max_age=0 means a sign-in made for this very request (OIDC Core 3.1.2.1).
  const tooOld =
    session &&
    request.maxAge !== null &&
    ctx.clock.now().getTime() - session.authTime.getTime() > request.maxAge * 1000;
  const otherUser = session && hintedSubject !== null && hintedSubject !== session.userId;
  const withoutFactor = session && !session.amr.includes('mfa');
  const enrol = withoutFactor && factors.requireMfa && !factors.hasFactor;
  const stepUp = withoutFactor && factors.hasFactor && (factors.requireMfa || request.acrValues[0] === ACR_MFA);
  const again = !!session && (tooOld || otherUser || stepUp || enrol || request.prompt.includes('login'));
  if (session && !again) return null;
  if (request.prompt.includes('none')) throw new LoginRequired();
  // Come back without what asked for the new sign-in, so that it is not asked for again.
  const back = { ...params };
  delete back.max_age;
  delete back.acr_values;
  const prompt = request.prompt.filter((v) => v !== 'login');
  if (prompt.length) back.prompt = prompt.join(' ');
  else delete back.prompt;
  const pairs = [...Object.entries(back), ...request.resources.map((r): [string, string] => ['resource', r])];
  const outcome: LoginOutcome = { kind: 'login', params: pairs, loginHint: request.loginHint };
  if (again) outcome.again = enrol ? 'enrol' : 'reauth';
  return outcome;
}
