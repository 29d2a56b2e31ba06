// Step 10: a fresh enough sign-in of the right user (prompt=login, max_age, id_token_hint), or off to sign in;
// with prompt=none, login_required instead.
import type { Context } from '../../../context.ts';
import { LoginRequired } from '../oauth.errors.ts';
import type { AuthorizationRequest, AuthorizeOutcome, BrowserSession } from './request.ts';

export function requireLogin(
  ctx: Context, request: AuthorizationRequest, session: BrowserSession | null, hintedSubject: string | null, params: Record<string, string>,
): Extract<AuthorizeOutcome, { kind: 'login' }> | null {
  // In milliseconds: max_age=0 means a sign-in made for this very request (OIDC Core 3.1.2.1).
  const tooOld = session && request.maxAge !== null && ctx.clock.now().getTime() - session.authTime.getTime() > request.maxAge * 1000;
  const otherUser = session && hintedSubject !== null && hintedSubject !== session.userId;
  if (session && !tooOld && !otherUser && !request.prompt.includes('login')) return null;
  if (request.prompt.includes('none')) throw new LoginRequired();
  // Come back without what asked for the new sign-in, so that it is not asked for again.
  const back = { ...params };
  delete back.max_age;
  const prompt = request.prompt.filter((v) => v !== 'login');
  if (prompt.length) back.prompt = prompt.join(' ');
  else delete back.prompt;
  return { kind: 'login', params: back, loginHint: request.loginHint };
}
