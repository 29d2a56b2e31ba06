// /sso/* as an attacker would call it (docs/architecture.md#single-sign-on): odd ids, NUL bytes, invalid UTF-8, huge
// and malformed SAML posts, another site as the place to go afterwards. Every answer is a redirect to /login with a
// reason (or a 4xx), never a 500, never a session, never another origin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { proveDomain, ssoSignInThroughOidc } from '../helpers/sso.ts';

let server: TestServer;
let dns: TestDnsServer;
let ca: TestCa;
let upstream: OidcUpstream;
let platform: Client;
let acme: Tenant;
let oidcId: string;
let samlId: string;

beforeAll(async () => {
  dns = await startDnsServer();
  ca = makeTestCa(['idp.test']);
  upstream = await startOidcUpstream(ca);
  server = await startTestServer({
    env: { DNS_SERVERS: dns.address, WEBHOOK_CA_FILE: ca.caFile },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme');
  await proveDomain(acme.owner.api, dns, 'acme.test');
  const oidc = await acme.owner.api.post('/api/v1/connections', {
    type: 'oidc',
    name: 'Acme IdP',
    issuer: upstream.issuer,
    client_id: upstream.clientId,
    client_secret: upstream.clientSecret,
    domains: ['acme.test'],
  });
  expect(oidc.status, JSON.stringify(oidc.body)).toBe(201);
  oidcId = oidc.body.id;
  upstream.redirectUris.add(oidc.body.callback_url);
  const saml = await acme.owner.api.post('/api/v1/connections', {
    type: 'saml',
    name: 'Acme SAML',
    entry_point: 'https://idp.acme.test/sso',
    idp_cert: ca.cert,
    domains: [],
  });
  samlId = saml.body.id;
});
afterAll(async () => {
  await server?.stop();
  await upstream?.close();
  await dns?.stop();
  ca?.remove();
});

/** A request as a browser sends it, not following redirects. */
const raw = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, { redirect: 'manual', ...init });
const reasonOf = (res: Response) =>
  new URL(res.headers.get('location') ?? '/', server.url).searchParams.get('sso_error');

describe('/sso/* under attack', () => {
  it('answers odd or unknown connection ids, and odd states, with a reason on /login', async () => {
    for (const path of [
      '/sso/..%2F..%2Fetc/start',
      '/sso/%00/start',
      `/sso/${'a'.repeat(200)}/start`,
      '/sso/01a217ee-0000-7000-8000-000000000000/start',
    ]) {
      const res = await raw(path);
      expect(res.status, path).toBe(303);
      expect(reasonOf(res), path).toBe('unknown_connection');
    }
    for (const query of [
      'state=%00',
      'state=%FF%FE&code=%FF',
      `state=${'x'.repeat(5000)}`,
      'state=a&state=b',
      'code=x',
    ]) {
      const res = await raw(`/sso/${oidcId}/callback?${query}`);
      expect(res.status, query).toBe(303);
      expect(reasonOf(res), query).toMatch(/^(expired_request|invalid_request)$/);
      expect(res.headers.get('set-cookie') ?? '', query).not.toContain('tessera_session=tss_');
    }
  });

  it('refuses SAML posts that are malformed, huge, or answer no request', async () => {
    const post = (body: string) =>
      raw(`/sso/${samlId}/acs`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
    for (const body of [
      'SAMLResponse=%00&RelayState=x',
      'SAMLResponse=not-base64!!&RelayState=x',
      'RelayState=x',
      '',
      `SAMLResponse=${Buffer.from('<x/>').toString('base64')}`,
    ]) {
      const res = await post(body);
      expect(res.status, body).toBe(303);
      expect(reasonOf(res), body).toMatch(/^(expired_request|invalid_request|invalid_response)$/);
    }
    const huge = await post(`RelayState=x&SAMLResponse=${'A'.repeat(2 * 1024 * 1024)}`);
    expect(huge.status).toBe(413);
  });

  it('serves SAML metadata for SAML connections only', async () => {
    const metadata = await raw(`/sso/${samlId}/metadata`);
    expect(metadata.status).toBe(200);
    expect(metadata.headers.get('content-type')).toContain('xml');
    expect(await metadata.text()).toContain(`${server.url}/sso/${samlId}/acs`);
    expect((await raw(`/sso/${oidcId}/metadata`)).status).toBe(404);
  });

  it('never sends the browser to another site after signing in', async () => {
    upstream.addAccount({ sub: 'eve', email: 'eve@acme.test', email_verified: true, name: 'Eve' });
    upstream.signInAs('eve');
    for (const returnTo of ['https://evil.test/', '//evil.test/', '/\\evil.test', '/\tevil', 'javascript:alert(1)']) {
      const result = await ssoSignInThroughOidc(server.url, oidcId, ca, { query: { return_to: returnTo } });
      expect(result.session, returnTo).toMatch(/^tss_/);
      expect(new URL(result.location).origin, returnTo).toBe(server.url);
      expect(new URL(result.location).pathname, returnTo).toBe('/login');
    }
  });
});
