// OAuth as the tests drive it without a browser: a client registered over REST, the signed-in browser's trip
// through GET /oauth/authorize (the redirect read, not followed), the consent page's decision, and POST /oauth/token
// with a form body, as a client's back end sends it. Each test still spells out its own parameters.
import * as oidc from 'openid-client';
import { client, signIn, type Client, type Reply } from './http.ts';
import { createTenant, PASSWORD, type Tenant } from './fixtures.ts';
import { ADMIN, startTestServer, type TestServer, type TestServerOptions } from './server.ts';

/** The cookie in which the portal keeps the session; /oauth/authorize reads the same one. */
const SESSION_COOKIE = 'tessera_session';

/** Where most OAuth tests start: a customer organization whose member has a browser session to authorize with. */
export interface SignedInMember {
  server: TestServer;
  /** The platform admin's REST client: it can register clients into any organization. */
  admin: Client;
  /** An organization with an owner, an admin and a member (createTenant). */
  tenant: Tenant;
  /** A portal session of tenant.member, sent as the browser's cookie. */
  session: string;
}

/**
 * Starts the service (with `options`: a movable clock, say), creates the tenant and signs its member in. When a step
 * fails the service is stopped before the error goes on, since the test file's afterAll has no server to stop then.
 */
export async function startWithSignedInMember(options: TestServerOptions = {}): Promise<SignedInMember> {
  const server = await startTestServer(options);
  try {
    const admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    const tenant = await createTenant(server.url, admin);
    return { server, admin, tenant, session: await sessionOf(server.url, tenant.member) };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** What POST /api/v1/oauth-clients answers: the client, and its secret, shown this once. */
export interface RegisteredClient {
  id: string;
  client_id: string;
  client_secret: string;
  organization_id: string;
  redirect_uris: string[];
}

/** What a client authenticates with at the token endpoint (client_secret_post). */
export type ClientCredentials = Pick<RegisteredClient, 'client_id' | 'client_secret'>;

/**
 * Registers an OAuth client as `api` (an organization admin, or the platform admin naming organization_id in the
 * body). Throws unless the answer is 201: a test's setup that cannot register has nothing to test.
 */
export async function registerClient(api: Client, body: Record<string, unknown>): Promise<RegisteredClient> {
  const reply = await api.post('/api/v1/oauth-clients', body);
  if (reply.status !== 201)
    throw new Error(`client registration failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

/**
 * openid-client's view of the service for client `c`: discovery, client_secret_post, and ID token signatures
 * checked against the published keys. `metadata` adds to the client's (the ID token algorithm it registered, say).
 */
export function relyingParty(
  baseUrl: string,
  c: ClientCredentials,
  metadata?: Partial<oidc.ClientMetadata>,
): Promise<oidc.Configuration> {
  return oidc.discovery(new URL(baseUrl), c.client_id, metadata, oidc.ClientSecretPost(c.client_secret), {
    // The test server speaks plain HTTP on 127.0.0.1.
    execute: [oidc.allowInsecureRequests, oidc.enableNonRepudiationChecks],
  });
}

/** A fresh portal session of `person` (signed in with the fixtures' password): the token its browser's cookie holds. */
export async function sessionOf(baseUrl: string, person: { email: string }): Promise<string> {
  return (await signIn(baseUrl, person.email, PASSWORD)).login.token;
}

/**
 * GET `url` as the browser holding portal session `session` (null: a signed-out browser). Redirects are not
 * followed, because where the service sends the browser is what the tests look at.
 */
export function browserGet(url: URL | string, session: string | null): Promise<Response> {
  return fetch(url, { redirect: 'manual', headers: session ? { cookie: `${SESSION_COOKIE}=${session}` } : {} });
}

/** Where GET `url` sends the browser holding `session`, as an absolute URL. Throws on anything but a 302. */
export async function followRedirect(url: URL | string, session: string | null): Promise<URL> {
  const res = await browserGet(url, session);
  const location = res.headers.get('location');
  if (res.status !== 302 || !location)
    throw new Error(`GET ${url} answered ${res.status} ${location ?? ''} ${await res.text()}`);
  return new URL(location, url);
}

/**
 * Sends the browser holding `session` to the authorization endpoint with these parameters and returns where it is
 * redirected: back to the client (with a code or an error), to /login or to /consent.
 */
export function authorize(
  baseUrl: string,
  session: string | null,
  params: Record<string, string> | URLSearchParams,
): Promise<URL> {
  return followRedirect(new URL(`/oauth/authorize?${new URLSearchParams(params)}`, baseUrl), session);
}

/** The authorization code of a redirect back to the client. Throws, naming the redirect, when it carries none. */
export function codeFrom(location: URL): string {
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no authorization code in the redirect to ${location}`);
  return code;
}

/**
 * Allow (or, with approve false, Deny) on the consent page the browser was sent to, through the GraphQL mutation the
 * portal's page calls, as the signed-in user. Returns where the browser goes next: back to the client.
 */
export async function decideConsent(baseUrl: string, session: string, consentPage: URL, approve = true): Promise<URL> {
  const request = consentPage.searchParams.get('request');
  if (!request) throw new Error(`not a consent page: ${consentPage}`);
  const reply = await client(baseUrl, { token: session }).post('/graphql', {
    query:
      'mutation($r: String!, $a: Boolean!) { decideConsent(request: $r, approve: $a) { __typename ... on ConsentDecision { redirectTo } } }',
    variables: { r: request, a: approve },
  });
  const redirectTo = reply.body?.data?.decideConsent?.redirectTo;
  if (!redirectTo) throw new Error(`decideConsent failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return new URL(redirectTo, baseUrl);
}

/** POST /oauth/token with a form body, the OAuth norm; `headers` adds to the request (an Origin, say). */
export function tokenRequest(
  baseUrl: string,
  params: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return client(baseUrl).post('/oauth/token', new URLSearchParams(params).toString(), {
    'content-type': 'application/x-www-form-urlencoded',
    ...headers,
  });
}

/** Exchanges `code` for tokens as `c` (client_secret_post) and returns the token endpoint's reply, whatever it is. */
export function exchangeCode(
  baseUrl: string,
  c: ClientCredentials,
  code: string,
  redirectUri: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  return tokenRequest(
    baseUrl,
    {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      client_id: c.client_id,
      client_secret: c.client_secret,
    },
    headers,
  );
}

/**
 * An access token of client `c` for `person` with `scope`, through the real code flow (the client needs no consent
 * and allows the scope; `redirectUri` is one of its redirect URIs).
 */
export async function accessTokenOf(
  baseUrl: string,
  person: { email: string },
  c: ClientCredentials,
  redirectUri: string,
  scope: string,
): Promise<string> {
  const session = await sessionOf(baseUrl, person);
  const back = await authorize(baseUrl, session, {
    client_id: c.client_id,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope,
    nonce: 'n',
    state: 's',
  });
  const tokens = await exchangeCode(baseUrl, c, codeFrom(back), redirectUri);
  if (tokens.status !== 200 || tokens.body.scope !== scope)
    throw new Error(`token exchange failed: ${tokens.status} ${JSON.stringify(tokens.body)}`);
  return tokens.body.access_token;
}
