// The pending request the consent page carries: signed by us (typ consent+jwt), bound to the user and the
// sign-in it was made under, valid for ten minutes, answered once (the jti is recorded with the answer).
import { randomUUID } from 'node:crypto';
import type { Context } from '../../../context.ts';
import { epochSeconds } from '../../../lib/clock.ts';
import { InvalidRequest } from '../oauth.errors.ts';
import type { AuthorizationRequest, BrowserSession } from './request.ts';

const CONSENT_REQUEST_TTL_SECONDS = 600;

export interface ConsentRequest {
  jti: string;
  exp: number;
  sub: string;
  sid: string;
  auth_time: number;
  /** How that sign-in was made (RFC 8176); absent in a request signed before amr was kept. */
  amr?: string[];
  /** The organization the grant is to act in: the client's, or the session's for a metadata document's client. */
  org?: string;
  req: AuthorizationRequest;
}

export async function signConsentRequest(
  ctx: Context,
  request: AuthorizationRequest,
  session: BrowserSession,
  organizationId: string,
): Promise<string> {
  const now = epochSeconds(ctx.clock.now());
  return ctx.keys.sign(
    {
      iss: ctx.settings.issuer(),
      jti: randomUUID(),
      sub: session.userId,
      sid: session.sessionId,
      auth_time: epochSeconds(session.authTime),
      amr: session.amr,
      org: organizationId,
      iat: now,
      exp: now + CONSENT_REQUEST_TTL_SECONDS,
      req: { ...request, prompt: [] },
    },
    'RS256',
    'consent+jwt',
  );
}

/** The request, if we signed it, it has not expired and it belongs to `userId`; else invalid_request. */
export async function readConsentRequest(ctx: Context, token: string, userId: string): Promise<ConsentRequest> {
  let payload;
  try {
    ({ payload } = await ctx.keys.verify(token, {
      issuer: ctx.settings.issuer(),
      typ: 'consent+jwt',
      currentDate: ctx.clock.now(),
    }));
  } catch {
    throw new InvalidRequest('The consent request is invalid or has expired: start again from the application');
  }
  if (payload.sub !== userId) throw new InvalidRequest('This consent request belongs to another sign-in');
  return payload as unknown as ConsentRequest;
}
