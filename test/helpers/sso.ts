// Single sign-on in the tests: an organization proves a domain through the real DNS check (test/helpers/dns.ts), and
// signs in through a real OpenID Connect provider over HTTPS (test/helpers/oidc-upstream.ts).
import { signIn, type Client } from './http.ts';
import { startDnsServer, type TestDnsServer } from './dns.ts';
import { makeTestCa, type TestCa } from './https-receiver.ts';
import { browserGet, followUntil, startOidcUpstream, type CookieJar, type OidcUpstream } from './oidc-upstream.ts';
import { ADMIN, type TestServer, type TestServerOptions } from './server.ts';
import { startPasskeyServer } from './webauthn.ts';

/** What a test of single sign-on stands on; `stop` ends all of it. */
export interface SsoStage {
  /** Tessera with passkeys (BASE_URL http://localhost:<port>), checking domains against `dns` and trusting `ca`. */
  server: TestServer & { origin: string };
  dns: TestDnsServer;
  ca: TestCa;
  /** An OpenID Connect provider at each of `hosts`, in their order. */
  upstreams: OidcUpstream[];
  /** The platform admin, signed in. */
  platform: Client;
  stop(): Promise<void>;
}

/**
 * A DNS server, a CA for the providers' HTTPS, an OpenID Connect provider at each of `hosts` (idp.test when none is
 * given), and Tessera set to use them (`options` as for startPasskeyServer, its env added to).
 */
export async function startSsoStage(options: TestServerOptions & { hosts?: string[] } = {}): Promise<SsoStage> {
  const { hosts = ['idp.test'], ...serverOptions } = options;
  const dns = await startDnsServer();
  const ca = makeTestCa(hosts);
  const upstreams: OidcUpstream[] = [];
  let server: (TestServer & { origin: string }) | undefined;
  const stop = async () => {
    await server?.stop();
    for (const upstream of upstreams) await upstream.close();
    await dns.stop();
    ca.remove();
  };
  try {
    for (const host of hosts) upstreams.push(await startOidcUpstream(ca, { host }));
    server = await startPasskeyServer({
      ...serverOptions,
      env: { ...serverOptions.env, DNS_SERVERS: dns.address, WEBHOOK_CA_FILE: ca.caFile },
      webhookResolver: serverOptions.webhookResolver ?? (async () => [{ address: '127.0.0.1', family: 4 }]),
    });
    const platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    return { server, dns, ca, upstreams, platform, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * An OpenID Connect connection to `upstream` made by `api` (an owner's for their organization, the platform admin's
 * with `platform: true`), `fields` added to the request; the provider accepts its callback. Its id.
 */
export async function addOidcConnection(
  api: Client,
  upstream: OidcUpstream,
  fields: Record<string, unknown>,
): Promise<string> {
  const created = await api.post('/api/v1/connections', {
    type: 'oidc',
    issuer: upstream.issuer,
    client_id: upstream.clientId,
    client_secret: upstream.clientSecret,
    scopes: ['openid', 'email', 'profile'],
    ...fields,
  });
  if (created.status !== 201)
    throw new Error(`create connection failed: ${created.status} ${JSON.stringify(created.body)}`);
  upstream.redirectUris.add(created.body.callback_url);
  return created.body.id;
}

/** Adds `domain` to the caller's organization, publishes its TXT record and verifies it; the domain's id. */
export async function proveDomain(
  api: Client,
  dns: TestDnsServer,
  domain: string,
  organizationId?: string,
): Promise<string> {
  const added = await api.post('/api/v1/domains', {
    domain,
    ...(organizationId ? { organization_id: organizationId } : {}),
  });
  if (added.status !== 201) throw new Error(`add domain failed: ${added.status} ${JSON.stringify(added.body)}`);
  dns.txt.set(added.body.verification.name, [added.body.verification.value]);
  const verified = await api.post(`/api/v1/domains/${added.body.id}/verify`);
  if (verified.status !== 200 || !verified.body.verified)
    throw new Error(`verify failed: ${verified.status} ${JSON.stringify(verified.body)}`);
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
  tesseraUrl: string,
  connectionId: string,
  ca: TestCa,
  options: { query?: Record<string, string>; jar?: CookieJar } = {},
): Promise<SsoSignInResult> {
  const jar: CookieJar = options.jar ?? new Map();
  const tessera = new URL(tesseraUrl);
  const start = `${tesseraUrl}/sso/${connectionId}/start?${new URLSearchParams(options.query ?? {})}`;
  const callback = await followUntil(
    start,
    (u) => u.host === tessera.host && u.pathname === `/sso/${connectionId}/callback`,
    { ca: ca.caPem, jar },
  );
  const answer = await browserGet(new URL(callback), { ca: ca.caPem, jar });
  return {
    location: answer.location ?? `(${answer.status})`,
    session: jar.get(tessera.host)?.get('tessera_session') ?? null,
    jar,
    callback,
  };
}

/** Sends the callback URL again from the same browser, as a replay would. */
export async function replayCallback(tesseraUrl: string, result: SsoSignInResult, ca: TestCa) {
  const answer = await browserGet(new URL(result.callback), { ca: ca.caPem, jar: result.jar });
  return answer.location ?? `(${answer.status})`;
}
