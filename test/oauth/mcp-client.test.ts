// An MCP client signs in end to end (docs/architecture.md#apps-without-secrets), with the official MCP TypeScript SDK on
// both sides. A small MCP server is a resource server: its RFC 9728 metadata names Tessera as its authorization server,
// and it checks every bearer token itself (signature, issuer, `typ: at+jwt`, and `aud` equal to its own resource URL).
// The SDK's client, with an OAuth provider of the test's, is answered 401, discovers Tessera from that metadata, names
// itself by a client ID metadata document (served over real HTTPS with a test CA), or registers dynamically where it
// falls back to that, and sends the person to Tessera in Chromium, who signs in and allows. It gets a token for that
// server's resource (RFC 8707) and calls a tool. A token for another resource, or for none, is refused by that server:
// the confused deputy MCP's authorization profile warns of.
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { createRemoteJWKSet, decodeJwt, errors, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshPage, launchChromium, signInOnPage } from '../helpers/browser.ts';
import { PASSWORD } from '../helpers/fixtures.ts';
import { client as http } from '../helpers/http.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import {
  authorize,
  codeFrom,
  decideConsent,
  registerClient,
  startWithSignedInMember,
  tokenRequest,
  type SignedInMember,
} from '../helpers/oauth.ts';

const toLoopback = async () => [{ address: '127.0.0.1', family: 4 as const }];

/** What Tessera's discovery says, of what the MCP server and the tests read. */
interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint: string;
  jwks_uri: string;
}

// ---- the MCP server, a resource server of Tessera's -------------------------------------------------------------

/** Why the MCP server refused a bearer token: jose's error code, and the claim when a claim failed. */
interface Refusal {
  code: string;
  claim?: string;
}

interface McpResourceServer {
  /** Its resource identifier (RFC 8707, RFC 9728): the URL of its MCP endpoint. */
  resource: string;
  /** Where its protected resource metadata is (RFC 9728 3.1). */
  metadataUrl: string;
  /** Each request it answered, as `METHOD /path`. */
  seen: string[];
  /** Each bearer token it refused, and why. */
  refused: Refusal[];
  close(): Promise<void>;
}

/**
 * An MCP server on 127.0.0.1 whose one tool, `whoami`, answers who the bearer token names. Every request to /mcp
 * needs an access token that Tessera signed for this server's resource; without one the answer is 401 with
 * `WWW-Authenticate: Bearer resource_metadata=...` (RFC 9728 5.1), so a client finds Tessera from there. Stateless:
 * each POST gets a fresh McpServer and transport, and GET (the optional event stream) is 405.
 */
async function startMcpServer(tessera: Discovery, name: string): Promise<McpResourceServer> {
  const jwks = createRemoteJWKSet(new URL(tessera.jwks_uri));
  const seen: string[] = [];
  const refused: Refusal[] = [];
  let resource = '';
  let metadataUrl = '';

  const challenge = (res: ServerResponse, error?: string) => {
    const params = [
      ...(error ? [`error="${error}"`, 'error_description="The access token is not valid for this resource"'] : []),
      `resource_metadata="${metadataUrl}"`,
    ];
    res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': `Bearer ${params.join(', ')}` });
    res.end(
      JSON.stringify(error ? { error, error_description: 'The access token is not valid for this resource' } : {}),
    );
  };

  /** The token's facts when Tessera signed it as an access token for this resource; null when it did not. */
  async function verify(token: string): Promise<AuthInfo | null> {
    try {
      const { payload } = await jwtVerify(token, jwks, { issuer: tessera.issuer, audience: resource, typ: 'at+jwt' });
      return {
        token,
        clientId: String(payload.client_id),
        scopes: typeof payload.scope === 'string' ? payload.scope.split(' ') : [],
        ...(payload.exp ? { expiresAt: payload.exp } : {}),
        resource: new URL(resource),
        extra: { sub: payload.sub, org_id: payload.org_id, client_id: payload.client_id },
      };
    } catch (error) {
      refused.push({
        code: error instanceof errors.JOSEError ? error.code : 'not a JOSE error',
        ...(error instanceof errors.JWTClaimValidationFailed ? { claim: error.claim } : {}),
      });
      return null;
    }
  }

  async function answer(req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse) {
    const path = new URL(req.url ?? '/', resource).pathname;
    seen.push(`${req.method} ${path}`);
    if (path === new URL(metadataUrl).pathname && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          resource,
          authorization_servers: [tessera.issuer],
          bearer_methods_supported: ['header'],
          resource_name: name,
        }),
      );
      return;
    }
    if (path !== '/mcp') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const token = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token) return challenge(res);
    const auth = await verify(token);
    if (!auth) return challenge(res, 'invalid_token');
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    req.auth = auth;
    const mcp = new McpServer({ name, version: '1.0.0' });
    mcp.registerTool('whoami', { description: 'Names the person and organization of the access token' }, (extra) => ({
      content: [{ type: 'text', text: JSON.stringify(extra.authInfo?.extra ?? null) }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void mcp.close());
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  }

  const server = createServer((req, res) => {
    answer(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  resource = new URL('/mcp', origin).href;
  metadataUrl = new URL('/.well-known/oauth-protected-resource/mcp', origin).href;
  return {
    resource,
    metadataUrl,
    seen,
    refused,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

// ---- the MCP client's side ---------------------------------------------------------------------------------------

/** A request the MCP client's transport sent, OAuth ones included. */
interface Sent {
  method: string;
  url: string;
  headers: Headers;
  body: string;
}

/** Where the person's browser came back to the agent, and what the consent page named. */
interface BackAtAgent {
  query: URLSearchParams;
  consentClientName: string | null;
  /** The resources the consent page said the access is for. */
  consentResources: string | null;
}

/**
 * The agent's OAuth provider, all in memory: a public client (no secret), known by its metadata document's URL when
 * `clientMetadataUrl` is given and registering dynamically otherwise. Sending the person to authorize is `visit`,
 * which drives the browser and answers where it came back.
 */
class TestAgent implements OAuthClientProvider {
  readonly clientMetadataUrl: string | undefined;
  readonly redirectUrl: string;
  readonly clientMetadata: OAuthClientMetadata;
  /** Each authorization URL the SDK sent the person to. */
  readonly authorizationUrls: URL[] = [];
  /** The last return from the browser. */
  back: BackAtAgent | undefined;
  readonly expectedState = randomBytes(16).toString('base64url');
  private information: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';
  private readonly visit: (url: URL) => Promise<BackAtAgent>;

  constructor(
    options: { name: string; redirectUrl: string; clientMetadataUrl?: string },
    visit: (url: URL) => Promise<BackAtAgent>,
  ) {
    this.visit = visit;
    this.clientMetadataUrl = options.clientMetadataUrl;
    this.redirectUrl = options.redirectUrl;
    this.clientMetadata = {
      client_name: options.name,
      redirect_uris: [options.redirectUrl],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code'],
      response_types: ['code'],
      scope: 'openid email',
    };
  }

  state() {
    return this.expectedState;
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(url);
    this.back = await this.visit(url);
  }

  /** The access token the agent holds; throws when it holds none. */
  accessToken(): string {
    if (!this.saved) throw new Error('the agent holds no tokens');
    return this.saved.access_token;
  }
}

/** A fetch that keeps each request it sends in `sent`; `headersFor` adds headers to one (a registration, say). */
function recordingFetch(sent: Sent[], headersFor: (url: URL, method: string) => Record<string, string> = () => ({})) {
  const recording: FetchLike = async (input, init) => {
    const url = new URL(String(input));
    const method = init?.method ?? 'GET';
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headersFor(url, method))) headers.set(name, value);
    const body = init?.body;
    // The SDK sends JSON as a string and forms as URLSearchParams.
    sent.push({
      method,
      url: url.href,
      headers,
      body: typeof body === 'string' || body instanceof URLSearchParams ? body.toString() : '',
    });
    return fetch(url, { ...init, headers });
  };
  return recording;
}

/** The text of a tool's first content item, read as JSON. */
function toolJson(result: Awaited<ReturnType<Client['callTool']>>): unknown {
  const [first] = result.content as { type: string; text?: string }[];
  if (first?.type !== 'text' || first.text === undefined) throw new Error(`no text in ${JSON.stringify(result)}`);
  return JSON.parse(first.text);
}

// ---- the setting ------------------------------------------------------------------------------------------------

let ca: TestCa;
let documents: HttpsReceiver;
let setup: SignedInMember;
let tessera: Discovery;
let mcp: McpResourceServer;
let otherMcp: McpResourceServer;
let browser: Browser;

const docUrl = (path: string) => documents.url('agent.test', path);
const AGENT_DOCUMENT = '/mcp-agent.json';
const AGENT_CALLBACK = '/mcp-agent/callback';
const REGISTERED_CALLBACK = '/registered-agent/callback';
const agentCallback = () => docUrl(AGENT_CALLBACK);

beforeAll(async () => {
  // given the agent's site: its client ID metadata document, served over HTTPS that Tessera trusts through the test
  // CA, and the pages its redirect URIs name, where the person's browser comes back
  ca = makeTestCa(['agent.test']);
  documents = await startHttpsReceiver(ca, (request, res) => {
    const path = new URL(request.path, 'https://agent.test').pathname;
    if (path === AGENT_CALLBACK || path === REGISTERED_CALLBACK)
      return res.writeHead(200, { 'content-type': 'text/plain' }).end('Back at the agent');
    if (path !== AGENT_DOCUMENT) return res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600' });
    res.end(
      JSON.stringify({
        client_id: docUrl(AGENT_DOCUMENT),
        client_name: 'MCP test agent',
        redirect_uris: [agentCallback()],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
      }),
    );
  });
  // and Tessera, with a customer organization that allows such apps
  setup = await startWithSignedInMember({ env: { WEBHOOK_CA_FILE: ca.caFile }, webhookResolver: toLoopback });
  const allowed = await setup.tenant.admin.api.patch(`/v1/organizations/${setup.tenant.id}`, {
    allow_metadata_clients: true,
  });
  expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
  tessera = (await http(setup.server.url).get('/.well-known/openid-configuration')).body as Discovery;

  // and two MCP servers, each registered by the organization as a resource one of its clients stands for
  mcp = await startMcpServer(tessera, 'Notes MCP server');
  otherMcp = await startMcpServer(tessera, 'Billing MCP server');
  for (const [name, server] of [
    ['MCP server', mcp],
    ['Other MCP server', otherMcp],
  ] as const) {
    await registerClient(setup.tenant.admin.api, {
      name,
      grant_types: ['client_credentials'],
      allowed_scopes: ['api'],
      resources: [server.resource],
    });
  }
  // and a browser that reaches agent.test on this machine and trusts exactly the agent's key (pinned), nothing else
  const spki = createHash('sha256')
    .update(new X509Certificate(ca.cert).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64');
  browser = await launchChromium([
    '--host-resolver-rules=MAP agent.test 127.0.0.1',
    `--ignore-certificate-errors-spki-list=${spki}`,
  ]);
});

afterAll(async () => {
  await browser?.close();
  await mcp?.close();
  await otherMcp?.close();
  await setup?.server.stop();
  await documents?.close();
  ca?.remove();
});

/**
 * The person's half, in a fresh Chromium context: opens the authorization URL, signs in as the tenant's member when
 * Tessera asks, allows on the consent page when it is shown, and is back at `callback`, on the agent's site.
 */
async function personAuthorizes(url: URL, callback: string): Promise<BackAtAgent> {
  const page: Page = await freshPage(browser, setup.server.url);
  const atCallback = (u: URL) => `${u.origin}${u.pathname}` === callback;
  try {
    const onTessera = (path: string) => {
      const at = new URL(page.url());
      return at.origin === new URL(setup.server.url).origin && at.pathname === path;
    };
    await page.goto(url.href);
    if (onTessera('/login')) {
      await signInOnPage(page, setup.tenant.member.email, PASSWORD);
      await page.waitForURL((u) => u.pathname !== '/login');
    }
    let consentClientName: string | null = null;
    let consentResources: string | null = null;
    // Anywhere else than the consent page or back at the agent, Tessera refused: say where, and what it said.
    if (!onTessera('/consent') && !atCallback(new URL(page.url()))) {
      const text = await page.locator('body').innerText();
      throw new Error(`the browser stopped at ${page.url()}: ${text.slice(0, 500)}`);
    }
    if (onTessera('/consent')) {
      consentClientName = await page.getByTestId('client-name').textContent();
      consentResources = await page.getByTestId('resources').textContent();
      await page.getByRole('button', { name: 'Allow' }).click();
    }
    await page.waitForURL(atCallback);
    return { query: new URL(page.url()).searchParams, consentClientName, consentResources };
  } finally {
    await page.context().close();
  }
}

/** An MCP initialize request to `url` with `token` as the bearer, as any MCP client sends it first. */
function initialize(url: string, token: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'plain fetch', version: '1' },
      },
    }),
  });
}

/**
 * Tokens of the agent known by its document for the signed-in member, without the SDK: the code flow with S256 PKCE,
 * `resource` (when given) at both endpoints. Answers the token endpoint's reply.
 */
async function agentTokens(resource?: string) {
  const verifier = oidc.randomPKCECodeVerifier();
  const withResource: Record<string, string> = resource ? { resource } : {};
  let back = await authorize(setup.server.url, setup.session, {
    client_id: docUrl(AGENT_DOCUMENT),
    redirect_uri: agentCallback(),
    response_type: 'code',
    scope: 'openid email',
    state: 'st',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...withResource,
  });
  if (back.pathname === '/consent') back = await decideConsent(setup.server.url, setup.session, back);
  return tokenRequest(setup.server.url, {
    grant_type: 'authorization_code',
    code: codeFrom(back),
    redirect_uri: agentCallback(),
    client_id: docUrl(AGENT_DOCUMENT),
    code_verifier: verifier,
    ...withResource,
  });
}

// ---- the tests ---------------------------------------------------------------------------------------------------

describe('an MCP client known by its client ID metadata document', () => {
  it('is sent to Tessera by the MCP server, signs the person in through the browser, and calls a tool with a token for that server', async () => {
    // given the SDK's client with the agent's provider, naming itself by its document
    const sent: Sent[] = [];
    const agent = new TestAgent(
      { name: 'MCP test agent', redirectUrl: agentCallback(), clientMetadataUrl: docUrl(AGENT_DOCUMENT) },
      (url) => personAuthorizes(url, agentCallback()),
    );
    const options = { authProvider: agent, fetch: recordingFetch(sent) };

    // when it connects without a token
    const first = new StreamableHTTPClientTransport(new URL(mcp.resource), options);
    await expect(new Client({ name: 'mcp-test-agent', version: '1.0.0' }).connect(first)).rejects.toThrow(
      UnauthorizedError,
    );

    // then the MCP server's 401 pointed it at the server's RFC 9728 metadata, which named Tessera
    expect(mcp.seen).toContain('GET /.well-known/oauth-protected-resource/mcp');
    expect(sent.map((s) => s.url)).toContain(mcp.metadataUrl);
    // and it sent the person to Tessera's authorization endpoint as the document's URL, for the server's resource
    expect(agent.authorizationUrls).toHaveLength(1);
    const asked = agent.authorizationUrls[0]!;
    expect(`${asked.origin}${asked.pathname}`).toBe(tessera.authorization_endpoint);
    expect(asked.searchParams.get('client_id')).toBe(docUrl(AGENT_DOCUMENT));
    expect(asked.searchParams.get('resource')).toBe(mcp.resource);
    expect(asked.searchParams.get('code_challenge_method')).toBe('S256');
    // without registering anywhere
    expect(sent.filter((s) => s.url === tessera.registration_endpoint)).toEqual([]);
    // and the person, having signed in and allowed the agent by its document's name, came back with a code
    expect(agent.back?.query.get('error'), agent.back?.query.toString()).toBeNull();
    expect(agent.back?.consentClientName).toBe('MCP test agent');
    expect(agent.back?.consentResources).toContain(mcp.resource);
    expect(agent.back?.query.get('state')).toBe(agent.expectedState);
    const code = agent.back?.query.get('code');
    expect(code).toBeTruthy();

    // when the SDK exchanges it
    await first.finishAuth(code!);

    // then it asked for the same resource at the token endpoint, with no secret
    const exchange = sent.filter((s) => s.url === tessera.token_endpoint);
    expect(exchange).toHaveLength(1);
    const form = new URLSearchParams(exchange[0]!.body);
    expect(form.get('resource')).toBe(mcp.resource);
    expect(form.get('client_id')).toBe(docUrl(AGENT_DOCUMENT));
    expect(form.has('client_secret')).toBe(false);
    // and the access token is for that server alone, for the member in their organization
    const agentToken = agent.accessToken();
    expect(decodeJwt(agentToken)).toMatchObject({
      aud: mcp.resource,
      sub: setup.tenant.member.id,
      org_id: setup.tenant.id,
      client_id: docUrl(AGENT_DOCUMENT),
    });

    // when it connects again and calls the tool
    const client = new Client({ name: 'mcp-test-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp.resource), options));
    try {
      const tools = await client.listTools();
      expect(tools.tools.map((t) => t.name)).toEqual(['whoami']);
      const result = await client.callTool({ name: 'whoami' });

      // then the MCP server took the token and names the person who signed in
      expect(result.isError ?? false).toBe(false);
      expect(toolJson(result)).toEqual({
        sub: setup.tenant.member.id,
        org_id: setup.tenant.id,
        client_id: docUrl(AGENT_DOCUMENT),
      });
    } finally {
      await client.close();
    }
    // having refused nothing after the sign-in
    expect(mcp.refused).toEqual([]);

    // and the other MCP server, which names Tessera too, refuses that token: it is not for it
    const elsewhere = await initialize(otherMcp.resource, agentToken);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(otherMcp.refused).toEqual([{ code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' }]);
  });

  it('a token for another resource, or for none, is refused by the MCP server for its audience', async () => {
    mcp.refused.length = 0;
    otherMcp.refused.length = 0;
    // given tokens of the same agent for the other MCP server's resource, and for no resource
    const forOther = await agentTokens(otherMcp.resource);
    expect(forOther.status, JSON.stringify(forOther.body)).toBe(200);
    expect(decodeJwt(forOther.body.access_token).aud).toBe(otherMcp.resource);
    const forNone = await agentTokens();
    expect(forNone.status, JSON.stringify(forNone.body)).toBe(200);
    expect(decodeJwt(forNone.body.access_token).aud).toBe(docUrl(AGENT_DOCUMENT));

    // then the other server takes its own token
    expect((await initialize(otherMcp.resource, forOther.body.access_token)).status).toBe(200);
    expect(otherMcp.refused).toEqual([]);

    // and the MCP server refuses it, and the token without a resource, as invalid_token for their audience
    for (const token of [forOther.body.access_token as string, forNone.body.access_token as string]) {
      const reply = await initialize(mcp.resource, token);
      expect(reply.status).toBe(401);
      const challenge = reply.headers.get('www-authenticate') ?? '';
      expect(challenge).toContain('error="invalid_token"');
      expect(challenge).toContain(`resource_metadata="${mcp.metadataUrl}"`);
    }
    expect(mcp.refused).toEqual([
      { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' },
      { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' },
    ]);
  });

  it('a resource no client of the organization registered is answered invalid_target, at either endpoint', async () => {
    const unregistered = new URL('/not-registered', mcp.resource).href;
    const verifier = oidc.randomPKCECodeVerifier();
    const query = {
      client_id: docUrl(AGENT_DOCUMENT),
      redirect_uri: agentCallback(),
      response_type: 'code',
      scope: 'openid email',
      state: 'st',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    };
    // at the authorization endpoint: back at the agent with the error, no code
    let back = await authorize(setup.server.url, setup.session, { ...query, resource: unregistered });
    if (back.pathname === '/consent') back = await decideConsent(setup.server.url, setup.session, back);
    expect(`${back.origin}${back.pathname}`).toBe(agentCallback());
    expect(back.searchParams.get('error')).toBe('invalid_target');
    expect(back.searchParams.get('code')).toBeNull();

    // at the token endpoint, with a code given for the registered resource
    back = await authorize(setup.server.url, setup.session, { ...query, resource: mcp.resource });
    if (back.pathname === '/consent') back = await decideConsent(setup.server.url, setup.session, back);
    const reply = await tokenRequest(setup.server.url, {
      grant_type: 'authorization_code',
      code: codeFrom(back),
      redirect_uri: agentCallback(),
      client_id: docUrl(AGENT_DOCUMENT),
      code_verifier: verifier,
      resource: unregistered,
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe('invalid_target');
  });
});

describe('an MCP client without a metadata document', () => {
  it('falls back to dynamic registration with an initial access token, and then signs in and calls the tool alike', async () => {
    // given an initial access token the organization's admin made for public clients, which the agent is configured with
    const made = await setup.tenant.admin.api.post('/api/v1/oauth-clients/registration-tokens', {
      name: 'MCP agents',
      scopes: ['openid', 'email'],
      public: true,
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const sent: Sent[] = [];
    const fetchFn = recordingFetch(sent, (url, method): Record<string, string> =>
      url.href === tessera.registration_endpoint && method === 'POST'
        ? { authorization: `Bearer ${made.body.token}` }
        : {},
    );
    // and a person who, before going to Tessera, has the admin let the newly registered client ask for the MCP
    // server's resource: a client registered with the organization asks only for resources registered for it
    const redirectUrl = docUrl(REGISTERED_CALLBACK);
    const agent = new TestAgent({ name: 'Registered MCP agent', redirectUrl }, async (url) => {
      const clientId = url.searchParams.get('client_id');
      const listed = await setup.tenant.admin.api.get('/api/v1/oauth-clients');
      const registered = (listed.body.oauth_clients as { id: string; client_id: string }[]).find(
        (c) => c.client_id === clientId,
      );
      if (!registered) throw new Error(`${clientId} is not among the organization's clients`);
      const granted = await setup.tenant.admin.api.patch(`/api/v1/oauth-clients/${registered.id}`, {
        resources: [mcp.resource],
      });
      if (granted.status !== 200) throw new Error(`PATCH resources: ${granted.status} ${JSON.stringify(granted.body)}`);
      return personAuthorizes(url, redirectUrl);
    });
    const options = { authProvider: agent, fetch: fetchFn };

    // when it connects without a token
    const first = new StreamableHTTPClientTransport(new URL(mcp.resource), options);
    await expect(new Client({ name: 'registered-agent', version: '1.0.0' }).connect(first)).rejects.toThrow(
      UnauthorizedError,
    );

    // then it registered at Tessera's registration endpoint with the token, and got a client ID of Tessera's
    const registration = sent.filter((s) => s.url === tessera.registration_endpoint);
    expect(registration).toHaveLength(1);
    expect(JSON.parse(registration[0]!.body)).toMatchObject({
      redirect_uris: [redirectUrl],
      token_endpoint_auth_method: 'none',
      scope: 'openid email',
    });
    const clientId = agent.clientInformation()?.client_id;
    expect(clientId).toMatch(/^tsc_/);
    // and the person went to authorize it for the MCP server's resource, and came back with a code
    const asked = agent.authorizationUrls[0]!;
    expect(asked.searchParams.get('client_id')).toBe(clientId);
    expect(asked.searchParams.get('resource')).toBe(mcp.resource);
    expect(agent.back?.query.get('error'), agent.back?.query.toString()).toBeNull();
    expect(agent.back?.consentClientName).toBe('Registered MCP agent');
    expect(agent.back?.query.get('state')).toBe(agent.expectedState);

    // when the SDK exchanges the code and connects again
    await first.finishAuth(agent.back!.query.get('code')!);
    expect(decodeJwt(agent.accessToken())).toMatchObject({ aud: mcp.resource, client_id: clientId });
    const client = new Client({ name: 'registered-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp.resource), options));
    try {
      // then the tool names the person, through the registered client
      expect(toolJson(await client.callTool({ name: 'whoami' }))).toEqual({
        sub: setup.tenant.member.id,
        org_id: setup.tenant.id,
        client_id: clientId,
      });
    } finally {
      await client.close();
    }
  });
});
