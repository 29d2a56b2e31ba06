// Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, docs/architecture.md#apps-without-secrets):
// an app registered nowhere names itself by the https URL of its own document, which Tessera fetches over real HTTPS
// (a test CA, trusted through WEBHOOK_CA_FILE) under the webhook address guard. It then signs a person into the
// organization their session acts in, where that organization's admins allow such apps, after a consent page that
// names the app's host and warns that it is not registered. Driven with openid-client as a public client.
import type { ServerResponse } from 'node:http';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheSeconds } from '../../schema/modules/clients/metadata-document.ts';
import { client as http } from '../helpers/http.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import {
  accessTokenOf,
  authorize,
  browserGet,
  codeFrom,
  decideConsent,
  registerClient,
  startWithSignedInMember,
  tokenRequest,
  type SignedInMember,
} from '../helpers/oauth.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const toLoopback = async () => [{ address: '127.0.0.1', family: 4 as const }];

let ca: TestCa;
let documents: HttpsReceiver;
let setup: SignedInMember;
let sql: pg.Client;
/** What the document server answers, by path: a JSON body with headers, or a raw answer. */
const served = new Map<string, (res: ServerResponse) => void>();

const docUrl = (path: string) => documents.url('agent.test', path);
const callbackOf = (path: string) => docUrl(`${path}/callback`);

/** A metadata document for the URL `path` names, with `extra` members over the usual ones. */
function serve(path: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const body = JSON.stringify({
    client_id: docUrl(path),
    client_name: 'Research agent',
    redirect_uris: [callbackOf(path)],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    ...extra,
  });
  served.set(path, (res) =>
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600', ...headers }).end(body),
  );
}

const fetchesOf = (path: string) => documents.received.filter((r) => r.path === path).length;

beforeAll(async () => {
  ca = makeTestCa(['agent.test']);
  documents = await startHttpsReceiver(ca, (request, res) => {
    const answer = served.get(request.path);
    if (answer) answer(res);
    else res.writeHead(404, { 'content-type': 'text/plain' }).end('no such document');
  });
  setup = await startWithSignedInMember({ env: { WEBHOOK_CA_FILE: ca.caFile }, webhookResolver: toLoopback });
  sql = new pg.Client({ connectionString: setup.server.databaseUrl });
  await sql.connect();
});
afterAll(async () => {
  await sql?.end();
  await setup?.server.stop();
  await documents?.close();
  ca?.remove();
});

const allow = (on: boolean) =>
  setup.tenant.admin.api.patch(`/v1/organizations/${setup.tenant.id}`, { allow_metadata_clients: on });

/** The authorization request of the app at `path`, with S256 PKCE; `params` adds to or overrides it. */
async function request(path: string, params: Record<string, string> = {}) {
  const verifier = oidc.randomPKCECodeVerifier();
  const query = {
    client_id: docUrl(path),
    redirect_uri: callbackOf(path),
    response_type: 'code',
    scope: 'openid email offline_access',
    state: 'st',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...params,
  };
  return { query, verifier };
}

/** The page the authorization endpoint answers with instead of a redirect, and its text. */
async function errorPage(path: string, params: Record<string, string> = {}) {
  const { query } = await request(path, params);
  const reply = await browserGet(
    new URL(`/oauth/authorize?${new URLSearchParams(query)}`, setup.server.url),
    setup.session,
  );
  return { status: reply.status, location: reply.headers.get('location'), text: await reply.text() };
}

describe('discovery', () => {
  it('says client ID metadata documents are supported', async () => {
    const reply = await http(setup.server.url).get('/.well-known/openid-configuration');
    expect(reply.body.client_id_metadata_document_supported).toBe(true);
  });
});

describe('an app known by its document', () => {
  beforeAll(async () => {
    serve('/agent.json');
  });

  it("is refused, back at its own redirect URI, where the person's organization does not allow such apps", async () => {
    const { query } = await request('/agent.json');
    const back = await authorize(setup.server.url, setup.session, query);
    expect(`${back.origin}${back.pathname}`).toBe(callbackOf('/agent.json'));
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('error_description')).toBe(
      'Your organization does not allow applications that are not registered with it',
    );
  });

  it('signs the person in where it is allowed: consent names its host and warns, the token acts in their organization', async () => {
    expect((await allow(true)).body.allow_metadata_clients).toBe(true);
    const { query, verifier } = await request('/agent.json');
    const consentPage = await authorize(setup.server.url, setup.session, query);
    expect(consentPage.pathname).toBe('/consent');

    const prompt = await http(setup.server.url, { token: setup.session }).post('/graphql', {
      query: 'query($r: String!) { consentPrompt(request: $r) { clientName organizationName unregisteredHost } }',
      variables: { r: consentPage.searchParams.get('request') },
    });
    expect(prompt.body.data.consentPrompt).toEqual({
      clientName: 'Research agent',
      organizationName: setup.tenant.name,
      unregisteredHost: new URL(docUrl('/agent.json')).host,
    });

    // The page itself, as the browser gets it, says so above the scopes.
    const page = await (await browserGet(consentPage, setup.session)).text();
    expect(page).toContain(`This application is not registered with ${setup.tenant.name}.`);
    expect(page).toContain(`<strong>${new URL(docUrl('/agent.json')).host}</strong>`);

    const back = await decideConsent(setup.server.url, setup.session, consentPage);
    const tokens = await tokenRequest(setup.server.url, {
      grant_type: 'authorization_code',
      code: codeFrom(back),
      redirect_uri: callbackOf('/agent.json'),
      client_id: docUrl('/agent.json'),
      code_verifier: verifier,
    });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(tokens.body.refresh_token).toBeTruthy();
    const me = await http(setup.server.url, { token: tokens.body.access_token }).get('/oauth/userinfo');
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(setup.tenant.member.email);
    expect(decodeJwt(tokens.body.access_token)).toMatchObject({
      client_id: docUrl('/agent.json'),
      org_id: setup.tenant.id,
    });

    // Within the document's max-age it was fetched once, and kept until then.
    expect(fetchesOf('/agent.json')).toBe(1);
    const { rows } = await sql.query(
      `select extract(epoch from metadata_expires_at - updated_at)::float as kept, token_endpoint_auth_method, secret_hash, allowed_scopes
       from oauth_clients where client_id = $1`,
      [docUrl('/agent.json')],
    );
    expect(rows[0]).toMatchObject({
      token_endpoint_auth_method: 'none',
      secret_hash: null,
      allowed_scopes: ['openid', 'profile', 'email', 'offline_access'],
    });
    expect(rows[0].kept).toBeGreaterThan(590);
    expect(rows[0].kept).toBeLessThanOrEqual(600);

    // The operator keeps the row; it is no client of theirs to list.
    const listed = await setup.admin.get('/api/v1/oauth-clients');
    expect(listed.body.oauth_clients.map((c: { client_id: string }) => c.client_id)).not.toContain(
      docUrl('/agent.json'),
    );

    // Turning the choice off ends what it was granted there.
    expect((await allow(false)).status).toBe(200);
    const refreshed = await tokenRequest(setup.server.url, {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token,
      client_id: docUrl('/agent.json'),
    });
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe('invalid_grant');
    expect((await http(setup.server.url, { token: tokens.body.access_token }).get('/oauth/userinfo')).status).toBe(401);
  });

  it('fetches a document once for 20 authorization requests at once, and every one of them is answered alike', async () => {
    expect((await allow(true)).status).toBe(200);
    serve('/crowd.json');
    const answers = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const { query } = await request('/crowd.json');
        return (await authorize(setup.server.url, setup.session, query)).pathname;
      }),
    );
    expect(new Set(answers)).toEqual(new Set(['/consent']));
    expect(fetchesOf('/crowd.json')).toBe(1);
    const { rows } = await sql.query('select count(*)::int as n from oauth_clients where client_id = $1', [
      docUrl('/crowd.json'),
    ]);
    expect(rows[0].n).toBe(1);
  });

  it('may ask only for the scopes of a person, never api', async () => {
    const { query } = await request('/agent.json', { scope: 'openid api' });
    const back = await authorize(setup.server.url, setup.session, query);
    expect(back.searchParams.get('error')).toBe('invalid_scope');
  });
});

describe("the organization's choice", () => {
  it('is made by its admins and owners, through the API or a session, never by a member or an app', async () => {
    const path = `/v1/organizations/${setup.tenant.id}`;
    const member = await setup.tenant.member.api.patch(path, { allow_metadata_clients: true });
    expect(member.status).toBe(403);
    expect(
      (await setup.tenant.owner.api.patch(path, { allow_metadata_clients: false })).body.allow_metadata_clients,
    ).toBe(false);
    const bad = await setup.tenant.admin.api.patch(path, { allow_metadata_clients: 'yes' });
    expect(bad.status).toBe(400);
    // An app's token, even the owner's with `api`: which apps sign members in is not an app's to change.
    const redirect = 'https://tenant-app.example.test/cb';
    const app = await registerClient(setup.tenant.admin.api, {
      name: 'Tenant app',
      redirect_uris: [redirect],
      allowed_scopes: ['openid', 'api'],
      consent_required: false,
    });
    const token = await accessTokenOf(setup.server.url, setup.tenant.owner, app, redirect, 'openid api');
    const byApp = await http(setup.server.url, { token }).patch(path, { allow_metadata_clients: true });
    expect(byApp.status).toBe(403);
    expect(byApp.body.reason).toBe('first_party_only');
    expect((await setup.tenant.admin.api.get(path)).body.allow_metadata_clients).toBe(false);
  });
});

describe('under the policies of the organization it acts in', () => {
  beforeAll(async () => {
    serve('/policy.json');
    expect((await allow(true)).status).toBe(200);
  });

  it('a consent given after the organization stopped allowing such apps goes back with access_denied, no code', async () => {
    const { query } = await request('/policy.json');
    const consentPage = await authorize(setup.server.url, setup.session, query);
    expect(consentPage.pathname).toBe('/consent');
    expect((await allow(false)).status).toBe(200);
    const back = await decideConsent(setup.server.url, setup.session, consentPage);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('code')).toBeNull();
    expect((await allow(true)).status).toBe(200);
  });

  it('require_mfa: a member without a second factor is sent to set one up first, as for a registered client', async () => {
    // The owner would need a factor to turn it on; the policy itself is what is under test.
    await sql.query('update organizations set require_mfa = true where id = $1', [setup.tenant.id]);
    try {
      const { query } = await request('/policy.json');
      const sent = await authorize(setup.server.url, setup.session, query);
      expect(sent.pathname).toBe('/portal/security');
      expect(sent.searchParams.get('enrol')).toBe('1');
    } finally {
      await sql.query('update organizations set require_mfa = false where id = $1', [setup.tenant.id]);
    }
  });
});

describe('how long a document is kept', () => {
  const at = new Date('2027-06-30T00:00:00Z');
  it.each([
    [{ 'cache-control': 'max-age=3600' }, 3600],
    [{ 'cache-control': 'public, max-age=10' }, 300],
    [{ 'cache-control': 'max-age=999999' }, 86400],
    [{ 'cache-control': 'no-store' }, 300],
    [{ 'cache-control': 'no-cache, max-age=3600' }, 300],
    [{ expires: 'Wed, 30 Jun 2027 02:00:00 GMT' }, 7200],
    [{ expires: 'yesterday' }, 300],
    [{}, 300],
  ])('%j: %i s', (headers, seconds) => {
    expect(cacheSeconds(new Headers(headers), at)).toBe(seconds);
  });
});

describe('refusals, on our page and never a redirect', () => {
  beforeAll(async () => {
    expect((await allow(true)).status).toBe(200);
  });

  const refusal = async (path: string, reason: string, params: Record<string, string> = {}) => {
    const page = await errorPage(path, params);
    expect(page.status, page.text).toBe(400);
    expect(page.location).toBeNull();
    expect(page.text).toContain('invalid_client');
    expect(page.text).toContain(reason);
  };

  it('a document naming another client_id', async () => {
    serve('/impostor.json', { client_id: docUrl('/agent.json') });
    await refusal('/impostor.json', 'client_id must be the URL the document was fetched from');
  });

  it('a redirect URI the document does not name', async () => {
    serve('/strict.json');
    const page = await errorPage('/strict.json', { redirect_uri: 'https://evil.test/callback' });
    expect(page.status).toBe(400);
    expect(page.location).toBeNull();
    expect(page.text).toContain('redirect_uri not registered');
  });

  it('an http URL, which is not fetched at all', async () => {
    const before = documents.received.length;
    const page = await errorPage('/agent.json', { client_id: docUrl('/agent.json').replace('https:', 'http:') });
    expect(page.status).toBe(400);
    expect(page.text).toContain('invalid_client');
    expect(documents.received.length).toBe(before);
  });

  it('a redirect, to a private address or anywhere: never followed', async () => {
    served.set('/moved.json', (res) => res.writeHead(302, { location: 'https://10.0.0.1/doc.json' }).end());
    await refusal('/moved.json', 'answered with a redirect, which is not followed');
  });

  it('a 6 MB body: the connection is dropped past 5 kB', async () => {
    served.set('/huge.json', (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(Buffer.alloc(6 * 1024 * 1024, 0x20));
    });
    await refusal('/huge.json', 'answered with more than 5120 bytes');
  });

  it('a body with a NUL, raw or escaped, a lone surrogate, and one that is not UTF-8', async () => {
    const raw = (path: string, body: Buffer) =>
      served.set(path, (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
    raw(
      '/nul.json',
      Buffer.from(
        `{"client_id":"${docUrl('/nul.json')}","redirect_uris":["${callbackOf('/nul.json')}"],"client_name":"a\u0000b"}`,
      ),
    );
    await refusal('/nul.json', 'the document contains a NUL byte');
    serve('/escaped-nul.json', { client_name: 'a\u0000b' });
    await refusal('/escaped-nul.json', 'client_name must not contain NUL (U+0000) characters');
    serve('/surrogate.json', { client_name: 'a\udfffb' });
    await refusal('/surrogate.json', 'client_name must be well-formed Unicode');
    raw('/latin1.json', Buffer.concat([Buffer.from('{"client_name":"'), Buffer.from([0xe9]), Buffer.from('"}')]));
    await refusal('/latin1.json', 'the document is not UTF-8');
  });

  it('a document that is not JSON, not served as JSON, missing, or carrying a secret', async () => {
    served.set('/text.json', (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('<html>'));
    await refusal('/text.json', 'the document is not JSON');
    served.set('/plain.json', (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('{}'));
    await refusal('/plain.json', 'the document is not served as application/json');
    await refusal('/missing.json', 'answered with HTTP status 404');
    serve('/secret.json', { client_secret: 'shh' });
    await refusal('/secret.json', 'client_secret must not be in a public document');
    serve('/confidential.json', { token_endpoint_auth_method: 'client_secret_post' });
    await refusal('/confidential.json', 'token_endpoint_auth_method must be none');
  });
});

describe('where the platform forbids private addresses or such apps', () => {
  let guarded: TestServer;
  let off: TestServer;
  beforeAll(async () => {
    serve('/agent.json');
    [guarded, off] = await Promise.all([
      startTestServer({
        env: { WEBHOOK_CA_FILE: ca.caFile, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' },
        webhookResolver: toLoopback,
      }),
      startTestServer({ env: { WEBHOOK_CA_FILE: ca.caFile, METADATA_CLIENTS: 'off' }, webhookResolver: toLoopback }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([guarded?.stop(), off?.stop()]);
  });

  const pageAt = async (server: TestServer) => {
    const { query } = await request('/agent.json');
    const reply = await browserGet(new URL(`/oauth/authorize?${new URLSearchParams(query)}`, server.url), null);
    return { status: reply.status, text: await reply.text() };
  };

  it('refuses a document at a private address', async () => {
    const before = fetchesOf('/agent.json');
    const page = await pageAt(guarded);
    expect(page.status).toBe(400);
    expect(page.text).toContain('private');
    expect(fetchesOf('/agent.json')).toBe(before);
  });

  it('with METADATA_CLIENTS=off: no fetch, invalid_client, and discovery says so', async () => {
    const before = fetchesOf('/agent.json');
    const page = await pageAt(off);
    expect(page.status).toBe(400);
    expect(page.text).toContain('invalid_client');
    expect(fetchesOf('/agent.json')).toBe(before);
    const discovery = await http(off.url).get('/.well-known/openid-configuration');
    expect(discovery.body.client_id_metadata_document_supported).toBe(false);
  });
});
