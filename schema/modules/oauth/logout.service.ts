// RP-Initiated Logout 1.0 at /oauth/logout. With a valid id_token_hint for the signed-in user the session ends at
// once; otherwise (any page could send the browser here) the user is asked first: the endpoint answers with a
// signed sign-out request, bound to the session, that only our confirmation page can post back. Redirects go only
// to a registered post_logout_redirect_uri.
import type { Context } from '../../context.ts';
import { epochSeconds } from '../../lib/clock.ts';
import { revokeSession } from '../sessions/sessions.service.ts';
import { findEnabledClient } from './enabled-client.ts';
import { verifyIdTokenHint } from './id-token-hint.ts';
import { InvalidClient, InvalidRequest } from './oauth.errors.ts';

const LOGOUT_REQUEST_TTL_SECONDS = 600;

type Params = Record<string, string>;

/** The browser's live session, if any. */
export interface LogoutSession {
  id: string;
  userId: string;
}

export type LogoutOutcome =
  /** Done (signed out, or nothing to sign out): to the post-logout URI with state, or to our own page when null. */
  | { kind: 'done'; redirect: string | null }
  /** Ask the user first: the confirmation page posts this request back. */
  | { kind: 'confirm'; request: string };

export async function logout(ctx: Context, params: Params, session: LogoutSession | null): Promise<LogoutOutcome> {
  const confirmed =
    params.logout_request !== undefined ? await readLogoutRequest(ctx, params.logout_request, session) : null;
  const p = confirmed ?? params;
  const hint =
    !confirmed && p.id_token_hint ? await verifyIdTokenHint(ctx, p.id_token_hint, p.client_id || null) : null;
  const clientId = p.client_id || hint?.clientId || null;
  const redirect = await postLogoutRedirect(ctx, clientId, p.post_logout_redirect_uri, p.state);
  if (session && !confirmed && hint?.subject !== session.userId) {
    return {
      kind: 'confirm',
      request: await signLogoutRequest(ctx, session, {
        client_id: clientId,
        post_logout_redirect_uri: p.post_logout_redirect_uri,
        state: p.state,
      }),
    };
  }
  if (session) await revokeSession(ctx, session.id);
  return { kind: 'done', redirect };
}

async function postLogoutRedirect(
  ctx: Context,
  clientId: string | null,
  uri: string | undefined,
  state: string | undefined,
): Promise<string | null> {
  if (!uri) return null;
  if (!clientId) throw new InvalidRequest('post_logout_redirect_uri needs id_token_hint or client_id');
  const client = await findEnabledClient(ctx, clientId).catch((error: unknown) => {
    throw error instanceof InvalidClient ? new InvalidRequest('Client not found') : error;
  });
  if (!client.postLogoutRedirectUris.includes(uri)) throw new InvalidRequest('post_logout_redirect_uri not registered');
  const url = new URL(uri);
  if (state !== undefined) url.searchParams.set('state', state);
  return url.toString();
}

interface LogoutRequest {
  client_id: string | null;
  post_logout_redirect_uri?: string;
  state?: string;
}

function signLogoutRequest(ctx: Context, session: LogoutSession, request: LogoutRequest): Promise<string> {
  const now = epochSeconds(ctx.clock.now());
  return ctx.keys.sign(
    { iss: ctx.settings.issuer(), sid: session.id, iat: now, exp: now + LOGOUT_REQUEST_TTL_SECONDS, req: request },
    'RS256',
    'logout+jwt',
  );
}

/** The confirmed request's parameters, if we signed it for this very session (a CSRF token as well as a request). */
async function readLogoutRequest(ctx: Context, token: string, session: LogoutSession | null): Promise<Params> {
  let payload;
  try {
    ({ payload } = await ctx.keys.verify(token, {
      issuer: ctx.settings.issuer(),
      typ: 'logout+jwt',
      currentDate: ctx.clock.now(),
    }));
  } catch {
    throw new InvalidRequest('The sign-out request is invalid or has expired: start again from the application');
  }
  if (session && payload.sid !== session.id)
    throw new InvalidRequest('This sign-out request belongs to another sign-in');
  const req = (payload.req ?? {}) as LogoutRequest;
  const out: Params = {};
  if (req.client_id) out.client_id = req.client_id;
  if (req.post_logout_redirect_uri) out.post_logout_redirect_uri = req.post_logout_redirect_uri;
  if (req.state !== undefined) out.state = req.state;
  return out;
}
