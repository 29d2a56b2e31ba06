// Step 2: the redirect URI is one the client registered, exactly (no prefix or pattern match: no open redirect),
// but for the port of a loopback IP redirect: a native app listens on whatever port it is given at the time of the
// request (RFC 8252 7.3), so http://127.0.0.1:{any}/cb matches a registered http://127.0.0.1/cb (and [::1] alike).
import { AuthorizePageError, InvalidRequest } from '../oauth.errors.ts';
import type { AuthorizeClient, SplitParams } from './request.ts';

const LOOPBACK_IPS = new Set(['127.0.0.1', '[::1]']);

export function checkRedirectUri(client: AuthorizeClient, { params, repeated }: SplitParams): string {
  const redirectUri = params.redirect_uri;
  if (repeated.includes('redirect_uri'))
    throw new AuthorizePageError(new InvalidRequest(`Parameter given more than once: ${repeated.join(', ')}`));
  if (!redirectUri) throw new AuthorizePageError(new InvalidRequest('redirect_uri is required'));
  if (!redirectUriRegistered(client.redirectUris, redirectUri))
    throw new AuthorizePageError(new InvalidRequest('redirect_uri not registered'));
  return redirectUri;
}

/** `uri` is registered exactly, or is a loopback IP redirect registered on every part but its port. */
export function redirectUriRegistered(registered: readonly string[], uri: string): boolean {
  if (registered.includes(uri)) return true;
  const asked = withoutLoopbackPort(uri);
  return asked !== null && registered.some((r) => withoutLoopbackPort(r) === asked);
}

/** An http loopback IP URL written canonically, without its port; null for any other string. */
function withoutLoopbackPort(value: string): string | null {
  if (value.length > 2048) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  // Only the parser's own spelling: what is compared is what a browser is sent to.
  if (url.protocol !== 'http:' || !LOOPBACK_IPS.has(url.hostname) || url.href !== value) return null;
  url.port = '';
  return url.href;
}
