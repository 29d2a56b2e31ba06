// Step 2: the redirect URI is one the client registered, exactly (no prefix or pattern match: no open redirect).
import { AuthorizePageError, InvalidRequest } from '../oauth.errors.ts';
import type { AuthorizeClient, SplitParams } from './request.ts';

export function checkRedirectUri(client: AuthorizeClient, { params, repeated }: SplitParams): string {
  const redirectUri = params.redirect_uri;
  if (repeated.includes('redirect_uri'))
    throw new AuthorizePageError(new InvalidRequest(`Parameter given more than once: ${repeated.join(', ')}`));
  if (!redirectUri) throw new AuthorizePageError(new InvalidRequest('redirect_uri is required'));
  if (!client.redirectUris.includes(redirectUri))
    throw new AuthorizePageError(new InvalidRequest('redirect_uri not registered'));
  return redirectUri;
}
