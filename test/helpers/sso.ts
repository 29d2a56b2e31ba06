// Single sign-on in the tests: an organization proves a domain through the real DNS check (test/helpers/dns.ts).
import type { Client } from './http.ts';
import type { TestDnsServer } from './dns.ts';
import type { TestCa } from './https-receiver.ts';
import { browserGet, followUntil, type CookieJar } from './oidc-upstream.ts';

/** Adds `domain` to the caller's organization, publishes its TXT record and verifies it; the domain's id. */
export async function proveDomain(api: Client, dns: TestDnsServer, domain: string, organizationId?: string): Promise<string> {
  const added = await api.post('/api/v1/domains', { domain, ...(organizationId ? { organization_id: organizationId } : {}) });
  if (added.status !== 201) throw new Error(`add domain failed: ${added.status} ${JSON.stringify(added.body)}`);
  dns.txt.set(added.body.verification.name, [added.body.verification.value]);
  const verified = await api.post(`/api/v1/domains/${added.body.id}/verify`);
  if (verified.status !== 200 || !verified.body.verified) throw new Error(`verify failed: ${verified.status} ${JSON.stringify(verified.body)}`);
  return added.body.id;
}

/** Where a sign-in through a connection ended, and the session it left in the browser (if any). */
export interface SsoSignInResult {
  /** Tessera's last redirect (the place to go on, or /login?sso_error=...). */
  location: string;
  session: string | null;
  /** The browser's cookies, to go on with (a second use of the same callback, say). */
  jar: CookieJar;
  /** The callback or ACS URL the provider sent the browser to. */
  callback: string;
}

/**
 * Goes through `/sso/{id}/start` as a browser: to the OpenID Connect provider (which signs the chosen person in at
 * once), back to Tessera's callback, and returns Tessera's answer to it.
 */
export async function ssoSignInThroughOidc(
  tesseraUrl: string, connectionId: string, ca: TestCa, options: { query?: Record<string, string>; jar?: CookieJar } = {},
): Promise<SsoSignInResult> {
  const jar: CookieJar = options.jar ?? new Map();
  const tessera = new URL(tesseraUrl);
  const start = `${tesseraUrl}/sso/${connectionId}/start?${new URLSearchParams(options.query ?? {})}`;
  const callback = await followUntil(start, (u) => u.host === tessera.host && u.pathname === `/sso/${connectionId}/callback`, { ca: ca.caPem, jar });
  const answer = await browserGet(new URL(callback), { ca: ca.caPem, jar });
  return { location: answer.location ?? `(${answer.status})`, session: jar.get(tessera.host)?.get('tessera_session') ?? null, jar, callback };
}

/** Sends the callback URL again from the same browser, as a replay would. */
export async function replayCallback(tesseraUrl: string, result: SsoSignInResult, ca: TestCa) {
  const answer = await browserGet(new URL(result.callback), { ca: ca.caPem, jar: result.jar });
  return answer.location ?? `(${answer.status})`;
}
