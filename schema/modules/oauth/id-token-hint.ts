// id_token_hint, at the authorization endpoint and at logout alike: an ID token we issued (our signature and
// issuer, typ JWT — an access token is at+jwt and is refused), to this client when one is named. An expired ID
// token is still a fine hint of who and which client (OIDC Core 3.1.2.1, RP-Initiated Logout 1.0 section 2).
import type { Context } from '../../context.ts';
import { InvalidRequest } from './oauth.errors.ts';

export interface IdTokenHint {
  /** The user the token was issued for. */
  subject: string;
  /** The client it was issued to. */
  clientId: string;
}

export async function verifyIdTokenHint(ctx: Context, hint: string, clientId: string | null): Promise<IdTokenHint> {
  let payload;
  try {
    if (hint.length > 8192) throw new Error('too long');
    ({ payload } = await ctx.keys.verify(hint, {
      issuer: ctx.settings.issuer(),
      typ: 'JWT',
      currentDate: new Date(0),
    }));
  } catch {
    throw new InvalidRequest('id_token_hint is not a valid ID token from this issuer');
  }
  const aud = Array.isArray(payload.aud) ? payload.aud[0] : payload.aud;
  if (typeof payload.sub !== 'string' || typeof aud !== 'string')
    throw new InvalidRequest('id_token_hint is not a valid ID token from this issuer');
  if (clientId && aud !== clientId) throw new InvalidRequest('id_token_hint was issued to another client');
  return { subject: payload.sub, clientId: aud };
}
