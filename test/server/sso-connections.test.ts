// Sign-in connections over REST (docs/architecture.md#single-sign-on): an organization's owners add SAML and
// OpenID Connect connections (admins read them) for their verified domains, never another organization's; secrets never come back;
// home-realm discovery finds the connection of an address or a domain, /oauth/authorize follows a login_hint there,
// and require_sso stops passwords for those addresses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { proveDomain } from '../helpers/sso.ts';

let server: TestServer;
let dns: TestDnsServer;
let ca: TestCa;
let platform: Client;
let acme: Tenant;
let other: Tenant;

beforeAll(async () => {
  dns = await startDnsServer();
  ca = makeTestCa();
  server = await startTestServer({ env: { DNS_SERVERS: dns.address } });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme');
  other = await createTenant(server.url, platform, 'Other');
  await proveDomain(acme.owner.api, dns, 'acme.test');
  await proveDomain(acme.owner.api, dns, 'acme-labs.test');
  await proveDomain(other.owner.api, dns, 'other.test');
});
afterAll(async () => {
  await server?.stop();
  await dns?.stop();
  ca?.remove();
});

/** Anonymous GraphQL, as the sign-in page asks it. */
const gql = async (url: string, query: string, variables?: Record<string, unknown>) =>
  (await client(url).post('/graphql', { query, variables })).body;

const saml = (extra: Record<string, unknown> = {}) => ({
  type: 'saml',
  name: 'Acme Okta',
  entry_point: 'https://idp.acme.test/sso',
  idp_cert: ca.cert,
  domains: ['acme.test'],
  ...extra,
});

describe("an organization's connections", () => {
  it('an owner adds a SAML connection for a verified domain; it shows its service provider URLs and never a secret', async () => {
    const created = await acme.owner.api.post(
      '/api/v1/connections',
      saml({
        name: 'Acme SAML',
        domains: ['ACME-LABS.test'],
        default_role: 'member',
        role_claim: 'groups',
        role_map: { 'acme-admins': 'admin' },
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const c = created.body;
    expect(c).toMatchObject({
      type: 'saml',
      name: 'Acme SAML',
      organization_id: acme.id,
      enabled: true,
      domains: ['acme-labs.test'],
      default_role: 'member',
      require_sso: false,
      role_claim: 'groups',
      role_map: { 'acme-admins': 'admin' },
      idp_certificates: 1,
    });
    expect(c.acs_url).toBe(`${server.url}/sso/${c.id}/acs`);
    expect(c.metadata_url).toBe(`${server.url}/sso/${c.id}/metadata`);
    const listed = await acme.owner.api.get('/api/v1/connections');
    expect(listed.body.connections.map((x: { id: string }) => x.id)).toContain(c.id);
    const removed = await acme.owner.api.delete(`/api/v1/connections/${c.id}`);
    expect(removed.status).toBe(204);
    expect((await acme.owner.api.get(`/api/v1/connections/${c.id}`)).status).toBe(404);
  });

  it("refuses a domain the organization has not verified, another organization's domain, and a domain another connection serves", async () => {
    for (const domain of ['unproven.test', 'other.test']) {
      const reply = await acme.owner.api.post('/api/v1/connections', saml({ domains: [domain] }));
      expect(reply.status, domain).toBe(400);
      expect(reply.body.details[0].path).toBe('domains');
    }
    const first = await acme.owner.api.post('/api/v1/connections', saml({ domains: ['acme.test'] }));
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const second = await acme.owner.api.post('/api/v1/connections', saml({ domains: ['acme.test'] }));
    expect(second.status).toBe(409);
    expect(second.body.error_description).toContain('acme.test');
    await acme.owner.api.delete(`/api/v1/connections/${first.body.id}`);
  });

  it('of 20 connections claiming one domain at once, one serves it', async () => {
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        acme.owner.api.post('/api/v1/connections', saml({ name: `Race ${i}`, domains: ['acme.test'] })),
      ),
    );
    const won = replies.filter((r) => r.status === 201);
    expect(won).toHaveLength(1);
    expect(replies.filter((r) => r.status !== 201).every((r) => r.status === 409)).toBe(true);
    await acme.owner.api.delete(`/api/v1/connections/${won[0]!.body.id}`);
  });

  it("a member cannot see or manage connections; another organization's connection is not found", async () => {
    const created = await acme.owner.api.post('/api/v1/connections', saml({ domains: [] }));
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect((await acme.member.api.get('/api/v1/connections')).status).toBe(403);
    expect((await acme.member.api.post('/api/v1/connections', saml({ domains: [] }))).status).toBe(403);
    for (const [method, reply] of [
      ['GET', await other.owner.api.get(`/api/v1/connections/${id}`)],
      ['PATCH', await other.owner.api.patch(`/api/v1/connections/${id}`, { enabled: false })],
      ['DELETE', await other.owner.api.delete(`/api/v1/connections/${id}`)],
    ] as const)
      expect(reply.status, method).toBe(404);
    // Nor can it point its own connection at Acme's subscription.
    expect((await acme.owner.api.get(`/api/v1/connections/${id}`)).body.enabled).toBe(true);
    await acme.owner.api.delete(`/api/v1/connections/${id}`);
  });

  it('refuses what a connection cannot hold, with the field named, never a 500', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'ldap', name: 'x' }, 'type'],
      [saml({ idp_cert: 'not a certificate' }), 'idp_cert'],
      [saml({ entry_point: 'http://idp.acme.test/sso' }), 'entry_point'],
      [saml({ entry_point: undefined, idp_cert: undefined }), 'metadata_xml'],
      [saml({ name: '' }), 'name'],
      [saml({ name: 'a\u0000b' }), 'name'],
      [saml({ default_role: 'emperor' }), 'default_role'],
      [saml({ role_map: { x: 'emperor' } }), 'role_map'],
      [saml({ client_secret: 'x' }), 'client_secret'],
      [saml({ seat_subscription_id: 'nope' }), 'seat_subscription_id'],
      [saml({ unknown_field: 1 }), 'unknown_field'],
      [{ type: 'oidc', name: 'x', issuer: 'http://idp.acme.test', client_id: 'a', client_secret: 'b' }, 'issuer'],
      [{ type: 'github', name: 'GitHub', client_id: 'a', client_secret: 'b' }, 'platform'],
    ];
    for (const [body, path] of cases) {
      const reply = await acme.owner.api.post('/api/v1/connections', body);
      expect(reply.status, `${path}: ${JSON.stringify(reply.body)}`).toBe(400);
      expect(reply.body.details?.map((d: { path: string }) => d.path).join(','), JSON.stringify(reply.body)).toContain(
        path,
      );
    }
    const bytes = await acme.owner.api.request(
      'POST',
      '/api/v1/connections',
      Buffer.concat([Buffer.from('{"type":"saml","name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
    );
    expect(bytes.status).toBe(400);
  });

  it('PATCH enabled: false takes the connection out of home-realm discovery at once', async () => {
    const created = await acme.owner.api.post('/api/v1/connections', saml({ domains: ['acme.test'] }));
    const route = () =>
      gql(server.url, 'query($e: String) { ssoRoute(email: $e) { connectionId name requireSso } }', {
        e: 'jane@Acme.test',
      });
    expect((await route()).data.ssoRoute).toEqual({
      connectionId: created.body.id,
      name: 'Acme Okta',
      requireSso: false,
    });
    const off = await acme.owner.api.patch(`/api/v1/connections/${created.body.id}`, { enabled: false });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect((await route()).data.ssoRoute).toBeNull();
    expect(
      (await gql(server.url, 'query { ssoRoute(email: "x@unknown.test") { connectionId } }')).data.ssoRoute,
    ).toBeNull();
    await acme.owner.api.delete(`/api/v1/connections/${created.body.id}`);
  });
});

describe('require_sso and home-realm discovery at /oauth/authorize', () => {
  it("a password stops working for the connection's domains, with a message that names where to sign in", async () => {
    const person = await createTenant(server.url, platform, 'Required');
    // The owner's address is on example.test; prove it and require SSO for it.
    await proveDomain(person.owner.api, dns, 'example.test');
    const created = await person.owner.api.post(
      '/api/v1/connections',
      saml({ name: 'Required IdP', domains: ['example.test'], require_sso: true }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const login = await client(server.url).post('/api/v1/auth/login', {
      email: person.member.email,
      password: PASSWORD,
    });
    expect(login.status).toBe(403);
    expect(login.body.error).toBe('sso_required');
    expect(login.body.error_description).toContain('Required IdP');
    // Unknown addresses of the domain get the same answer: it says nothing of who has an account.
    const unknown = await client(server.url).post('/api/v1/auth/login', {
      email: 'nobody@example.test',
      password: PASSWORD,
    });
    expect(unknown.body).toEqual(login.body);
    // Switched off, the connection no longer holds passwords back.
    await person.owner.api.patch(`/api/v1/connections/${created.body.id}`, { enabled: false });
    expect(
      (await client(server.url).post('/api/v1/auth/login', { email: person.member.email, password: PASSWORD })).status,
    ).toBe(200);
    await person.owner.api.delete(`/api/v1/connections/${created.body.id}`);
  });

  it("login_hint and domain_hint of a served domain go straight to the connection's start", async () => {
    const created = await acme.owner.api.post('/api/v1/connections', saml({ domains: ['acme.test'] }));
    const app = await acme.owner.api.post('/api/v1/oauth-clients', {
      name: 'Acme app',
      redirect_uris: ['https://app.acme.test/cb'],
      allowed_scopes: ['openid', 'email'],
    });
    expect(app.status, JSON.stringify(app.body)).toBe(201);
    const authorize = (extra: Record<string, string>) =>
      fetch(
        `${server.url}/oauth/authorize?${new URLSearchParams({ client_id: app.body.client_id, redirect_uri: 'https://app.acme.test/cb', response_type: 'code', scope: 'openid email', state: 's', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256', ...extra })}`,
        { redirect: 'manual' },
      );
    for (const hint of [{ login_hint: 'jane@acme.test' }, { domain_hint: 'acme.test' }] as Record<string, string>[]) {
      const location = new URL((await authorize(hint)).headers.get('location')!, server.url);
      expect(location.pathname, JSON.stringify(hint)).toBe(`/sso/${created.body.id}/start`);
      expect(location.searchParams.get('return_to')).toMatch(/^\/oauth\/authorize\?/);
    }
    const elsewhere = new URL(
      (await authorize({ login_hint: 'jane@elsewhere.test' })).headers.get('location')!,
      server.url,
    );
    expect(elsewhere.pathname).toBe('/login');
    await acme.owner.api.delete(`/api/v1/connections/${created.body.id}`);
  });
});
