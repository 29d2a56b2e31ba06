// An OpenID Connect sign-in end to end over real HTTP (docs/architecture.md#single-sign-on): an organization proves its
// domain and creates an OIDC connection over REST (Tessera discovers the issuer through the webhook address guard,
// trusting the provider's certificate by WEBHOOK_CA_FILE), and a person goes /sso/{id}/start -> a real oidc-provider
// -> /sso/{id}/callback, landing signed in as a new member with the role the provider's groups map to. A replayed
// callback, another browser, and every bad answer (tampered token, another issuer, another nonce, the provider's own
// refusal) end on /login with the reason and no session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import {
  browserGet,
  followUntil,
  startOidcUpstream,
  type CookieJar,
  type Misbehaviour,
  type OidcUpstream,
} from '../helpers/oidc-upstream.ts';
import { proveDomain, ssoSignInThroughOidc } from '../helpers/sso.ts';

const DOMAIN = 'oidc-acme.test';
const METRICS_TOKEN = 'sso-metrics-token-0123456789abcdef';

/** tessera_sign_ins_total for single sign-on, by outcome, from /metrics. */
async function ssoSignIns(): Promise<Record<string, number>> {
  const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(res.status).toBe(200);
  const counts: Record<string, number> = {};
  for (const m of (await res.text()).matchAll(/^tessera_sign_ins_total\{outcome="(\w+)",method="sso"\} (\d+)$/gm))
    counts[m[1]!] = Number(m[2]);
  return counts;
}

let server: TestServer;
let dns: TestDnsServer;
let ca: TestCa;
let upstream: OidcUpstream;
let acme: Tenant;
let connectionId: string;

beforeAll(async () => {
  dns = await startDnsServer();
  ca = makeTestCa(['idp.test']);
  upstream = await startOidcUpstream(ca);
  upstream.addAccount({
    sub: 'ada-1',
    email: `ada@${DOMAIN}`,
    email_verified: true,
    name: 'Ada Lovelace',
    groups: ['acme-admins', 'engineering'],
  });
  upstream.addAccount({
    sub: 'bob-2',
    email: `bob@${DOMAIN}`,
    email_verified: true,
    name: 'Bob',
    groups: ['engineering'],
  });
  upstream.addAccount({
    sub: 'eve-3',
    email: 'eve@elsewhere.test',
    email_verified: true,
    name: 'Eve',
    groups: ['acme-admins'],
  });
  server = await startTestServer({
    env: { DNS_SERVERS: dns.address, WEBHOOK_CA_FILE: ca.caFile, METRICS_TOKEN },
    // The provider's host name is this machine (WEBHOOK_ALLOW_PRIVATE_NETWORKS is on in tests).
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  const platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme OIDC');
  await proveDomain(acme.owner.api, dns, DOMAIN);
  const created = await acme.owner.api.post('/api/v1/connections', {
    type: 'oidc',
    name: 'Acme IdP',
    domains: [DOMAIN],
    default_role: 'member',
    role_claim: 'groups',
    role_map: { 'acme-admins': 'admin' },
    issuer: upstream.issuer,
    client_id: upstream.clientId,
    client_secret: upstream.clientSecret,
    scopes: ['openid', 'email', 'profile', 'groups'],
  });
  if (created.status !== 201)
    throw new Error(`create connection failed: ${created.status} ${JSON.stringify(created.body)}`);
  connectionId = created.body.id;
  upstream.redirectUris.add(created.body.callback_url);
});
afterAll(async () => {
  await server?.stop();
  await upstream?.close();
  await dns?.stop();
  ca?.remove();
});

/** Where a redirect leads on Tessera: its path and query. */
const at = (location: string | null | undefined) => {
  const url = new URL(location ?? '', server.url);
  return `${url.pathname}${url.search}`;
};

/** The organization's member with this address, as its owner sees them (or undefined). */
async function memberWith(email: string) {
  const members = await acme.owner.api.get(`/v1/organizations/${acme.id}/members?limit=100`);
  expect(members.status).toBe(200);
  return (
    members.body.members as { role: string; user: { email: string; name: string; email_verified: boolean } }[]
  ).find((m) => m.user.email === email);
}

describe('an OpenID Connect connection over REST', () => {
  it('shows its callback and never its secret; an issuer that does not answer is refused', async () => {
    const shown = await acme.owner.api.get(`/api/v1/connections/${connectionId}`);
    expect(shown.body).toMatchObject({
      type: 'oidc',
      issuer: upstream.issuer,
      client_id: upstream.clientId,
      has_client_secret: true,
      callback_url: `${server.url}/sso/${connectionId}/callback`,
    });
    expect(JSON.stringify(shown.body)).not.toContain(upstream.clientSecret);
    const unreachable = await acme.owner.api.post('/api/v1/connections', {
      type: 'oidc',
      name: 'Nowhere',
      domains: [],
      issuer: 'https://idp.test:1',
      client_id: 'a',
      client_secret: 'b',
    });
    expect(unreachable.status, JSON.stringify(unreachable.body)).toBeGreaterThanOrEqual(400);
    expect(unreachable.status).toBeLessThan(500);
    expect(JSON.stringify(unreachable.body)).toMatch(/could not be reached/);
  });
});

describe('signing in through the provider', () => {
  it('the person lands signed in, as a new member with the role their groups map to, and a replayed callback is refused', async () => {
    upstream.signInAs('ada-1');
    const result = await ssoSignInThroughOidc(server.url, connectionId, ca, { query: { return_to: '/portal' } });
    expect(at(result.location)).toBe('/portal');
    expect(result.session).toMatch(/^tss_/);
    const me = await client(server.url, { token: result.session! }).get('/api/v1/users/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: `ada@${DOMAIN}`, name: 'Ada Lovelace', email_verified: true });
    expect(await memberWith(`ada@${DOMAIN}`)).toMatchObject({
      role: 'admin',
      user: { name: 'Ada Lovelace', email_verified: true },
    });

    // The same callback URL again, from the same browser (its session cookie set aside, to see whether another
    // comes): the sign-in was used up.
    const host = new URL(server.url).host;
    const jar: CookieJar = new Map([
      [host, new Map([...result.jar.get(host)!].filter(([name]) => name !== 'tessera_session'))],
    ]);
    const replay = await browserGet(new URL(result.callback), { ca: ca.caPem, jar });
    expect(at(replay.location)).toBe('/login?sso_error=expired_request');
    expect(jar.get(host)?.get('tessera_session')).toBeUndefined();
  });

  it("a second sign-in is the same person, with the provider's role applied again", async () => {
    upstream.signInAs('bob-2');
    const first = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect(first.session).toMatch(/^tss_/);
    expect(await memberWith(`bob@${DOMAIN}`)).toMatchObject({ role: 'member' });
    upstream.addAccount({
      sub: 'bob-2',
      email: `bob@${DOMAIN}`,
      email_verified: true,
      name: 'Bob',
      groups: ['acme-admins'],
    });
    const second = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect(second.session).toMatch(/^tss_/);
    const a = await client(server.url, { token: first.session! }).get('/api/v1/users/me');
    const b = await client(server.url, { token: second.session! }).get('/api/v1/users/me');
    expect(b.body.id).toBe(a.body.id);
    expect(await memberWith(`bob@${DOMAIN}`)).toMatchObject({ role: 'admin' });
  });

  it('a callback brought by another browser is refused', async () => {
    upstream.signInAs('ada-1');
    const tessera = new URL(server.url);
    const callback = await followUntil(
      `${server.url}/sso/${connectionId}/start`,
      (u) => u.host === tessera.host && u.pathname.endsWith('/callback'),
      { ca: ca.caPem },
    );
    const elsewhere: CookieJar = new Map();
    const answer = await browserGet(new URL(callback), { ca: ca.caPem, jar: elsewhere });
    expect(at(answer.location)).toBe('/login?sso_error=wrong_browser');
    expect(elsewhere.get(tessera.host)?.get('tessera_session')).toBeUndefined();
  });

  it("an address outside the connection's domains is refused", async () => {
    upstream.signInAs('eve-3');
    const result = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect(at(result.location)).toBe('/login?sso_error=email_outside_domains');
    expect(result.session).toBeNull();
  });

  it('is counted in /metrics as a sign-in by the sso method, by outcome', async () => {
    const before = await ssoSignIns();
    upstream.signInAs('ada-1');
    expect((await ssoSignInThroughOidc(server.url, connectionId, ca)).session).toMatch(/^tss_/);
    upstream.signInAs('eve-3');
    expect((await ssoSignInThroughOidc(server.url, connectionId, ca)).session).toBeNull();
    const after = await ssoSignIns();
    expect((after.success ?? 0) - (before.success ?? 0)).toBe(1);
    expect((after.failure ?? 0) - (before.failure ?? 0)).toBe(1);
  });
});

describe('answers that sign nobody in', () => {
  const cases: [string, Misbehaviour][] = [
    ['an ID token signed with a key the provider does not publish', { signWithOtherKey: true }],
    ['an ID token from another issuer', { claims: { iss: 'https://evil.test' } }],
    ['an ID token with another nonce', { claims: { nonce: 'not-this-sign-in' } }],
  ];
  for (const [what, misbehaviour] of cases) {
    it(what, async () => {
      upstream.signInAs('ada-1');
      upstream.misbehave(misbehaviour);
      try {
        const result = await ssoSignInThroughOidc(server.url, connectionId, ca);
        expect(at(result.location)).toBe('/login?sso_error=invalid_response');
        expect(result.session).toBeNull();
      } finally {
        upstream.misbehave(null);
      }
    });
  }

  it("the provider's own refusal (access_denied)", async () => {
    upstream.refuse({ error: 'access_denied', error_description: 'The person declined' });
    try {
      const result = await ssoSignInThroughOidc(server.url, connectionId, ca);
      expect(new URL(result.callback).searchParams.get('error')).toBe('access_denied');
      expect(at(result.location)).toBe('/login?sso_error=idp_error');
      expect(result.session).toBeNull();
    } finally {
      upstream.refuse(null);
    }
  });

  it('a switched-off connection stops its sign-ins at once', async () => {
    expect((await acme.owner.api.patch(`/api/v1/connections/${connectionId}`, { enabled: false })).status).toBe(200);
    try {
      const start = await fetch(`${server.url}/sso/${connectionId}/start`, { redirect: 'manual' });
      expect(start.status).toBe(303);
      expect(at(start.headers.get('location'))).toBe('/login?sso_error=disabled');
    } finally {
      await acme.owner.api.patch(`/api/v1/connections/${connectionId}`, { enabled: true });
    }
  });
});
