// Just-in-time membership through an OpenID Connect connection (docs/architecture.md#single-sign-on), against a real
// oidc-provider over HTTPS: the first sign-in makes the account and the membership (role from the provider's groups,
// a seat while one is left), later ones apply the role again; the provider may only vouch for its domains; a
// sign-in works once and only in the browser that started it; an admin's test signs nobody in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, type Tenant } from '../helpers/fixtures.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import {
  browserGet,
  followUntil,
  startOidcUpstream,
  type CookieJar,
  type OidcUpstream,
} from '../helpers/oidc-upstream.ts';
import { proveDomain, replayCallback, ssoSignInThroughOidc } from '../helpers/sso.ts';

let server: TestServer;
let dns: TestDnsServer;
let ca: TestCa;
let upstream: OidcUpstream;
let platform: Client;
let acme: Tenant;
let other: Tenant;
let connectionId: string;
let subscriptionId: string;

const errorOf = (location: string) => new URL(location, 'http://x').searchParams.get('sso_error');
const session = (token: string | null) => client(server.url, { token: token ?? undefined });

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
  other = await createTenant(server.url, platform, 'Other');
  await proveDomain(acme.owner.api, dns, 'acme.test');
  const product = await platform.post('/v1/products', {
    name: 'Insights',
    slug: 'insights-sso',
    features: ['reports'],
  });
  const subscription = await platform.post('/api/v1/subscriptions', {
    organization_id: acme.id,
    product_id: product.body.id,
    total_seats: 1,
    price_per_seat: 5,
    billing_cycle: 'monthly',
    status: 'active',
  });
  expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
  subscriptionId = subscription.body.id;
  const created = await acme.owner.api.post('/api/v1/connections', {
    type: 'oidc',
    name: 'Acme IdP',
    issuer: upstream.issuer,
    client_id: upstream.clientId,
    client_secret: upstream.clientSecret,
    domains: ['acme.test'],
    role_claim: 'groups',
    role_map: { 'acme-admins': 'admin' },
    scopes: ['email', 'profile', 'groups'],
    seat_subscription_id: subscriptionId,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect(created.body).not.toHaveProperty('client_secret');
  connectionId = created.body.id;
  upstream.redirectUris.add(created.body.callback_url);
});
afterAll(async () => {
  await server?.stop();
  await upstream?.close();
  await dns?.stop();
  ca?.remove();
});

const eventsOf = (organizationId: string) => server.base.db.event.findMany({ where: { organizationId } });

describe('the first sign-in', () => {
  it('creates the person, verified, as a member with a seat, with the events and audit entries of an invitation', async () => {
    upstream.addAccount({
      sub: 'jane-1',
      email: 'Jane@acme.test',
      email_verified: true,
      name: 'Jane Doe',
      groups: ['staff'],
    });
    upstream.signInAs('jane-1');
    // The events written since: told apart by id, not by position (ids made in the same millisecond do not sort by time).
    const before = new Set((await eventsOf(acme.id)).map((e) => e.id));
    const result = await ssoSignInThroughOidc(server.url, connectionId, ca, {
      query: { return_to: '/portal/dashboard' },
    });
    expect(new URL(result.location).pathname).toBe('/portal/dashboard');
    expect(result.session).toMatch(/^tss_/);
    const me = await session(result.session).get('/api/v1/users/me');
    expect(me.body).toMatchObject({ email: 'jane@acme.test', name: 'Jane Doe', email_verified: true });
    const current = await session(result.session).get('/api/v1/auth/session');
    expect(current.body.organization).toMatchObject({ id: acme.id, role: 'member' });
    const seats = await acme.owner.api.get(`/api/v1/subscriptions/${subscriptionId}/seats`);
    expect(seats.body.seats.map((s: { user_id?: string; user?: { id: string } }) => s.user_id ?? s.user?.id)).toEqual([
      me.body.id,
    ]);
    const kinds = (await eventsOf(acme.id)).filter((e) => !before.has(e.id)).map((e) => e.kind);
    expect(kinds).toEqual(expect.arrayContaining(['user.created', 'member.added', 'organization.member.added']));
    const audit = await server.base.db.auditLog.findMany({
      where: { organizationId: acme.id, targetId: me.body.id },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((a) => a.action)).toEqual(
      expect.arrayContaining(['sso.identity.link', 'member.add', 'auth.login']),
    );
    const seated = await server.base.db.auditLog.findMany({
      where: { organizationId: acme.id, action: 'subscription.seat.assign', targetId: subscriptionId },
    });
    expect(seated.map((a) => [a.outcome, a.details])).toEqual([['success', { userId: me.body.id, via: 'sso' }]]);
  });

  it('signs the same person in again as the same account, and without a seat left the next person still signs in and the audit log says why', async () => {
    upstream.signInAs('jane-1');
    const again = await ssoSignInThroughOidc(server.url, connectionId, ca);
    const jane = await session(again.session).get('/api/v1/users/me');
    expect(await server.base.db.user.count({ where: { email: 'jane@acme.test' } })).toBe(1);

    upstream.addAccount({ sub: 'kim-2', email: 'kim@acme.test', email_verified: true, name: 'Kim' });
    upstream.signInAs('kim-2');
    const kim = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect(kim.session).toMatch(/^tss_/);
    const kimId = (await session(kim.session).get('/api/v1/users/me')).body.id;
    const seats = await acme.owner.api.get(`/api/v1/subscriptions/${subscriptionId}/seats`);
    expect(seats.body.seats).toHaveLength(1);
    expect(JSON.stringify(seats.body.seats)).toContain(jane.body.id);
    const refused = await server.base.db.auditLog.findMany({
      where: { organizationId: acme.id, action: 'subscription.seat.assign', outcome: 'failure' },
    });
    expect(refused.map((a) => a.details)).toEqual([
      expect.objectContaining({ userId: kimId, via: 'sso', reason: 'conflict' }),
    ]);
  });

  it("takes the role from the provider's groups at every sign-in", async () => {
    upstream.addAccount({
      sub: 'lee-3',
      email: 'lee@acme.test',
      email_verified: true,
      name: 'Lee',
      groups: ['acme-admins'],
    });
    upstream.signInAs('lee-3');
    const first = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect((await session(first.session).get('/api/v1/auth/session')).body.organization.role).toBe('admin');
    upstream.addAccount({ sub: 'lee-3', email: 'lee@acme.test', email_verified: true, name: 'Lee', groups: ['staff'] });
    const second = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect((await session(second.session).get('/api/v1/auth/session')).body.organization.role).toBe('member');
    const kinds = (await eventsOf(acme.id)).map((e) => e.kind);
    expect(kinds).toContain('member.role.changed');
  });

  it('links an account that already has the address instead of making a second one', async () => {
    const invited = await addPerson(server.url, acme.owner.api, acme.id, 'member', 'invited');
    const [local] = invited.email.split('@');
    // addPerson's addresses are on example.test: give this one an address of the connection's domain, proven.
    await server.base.db.user.update({
      where: { id: invited.id },
      data: { email: `${local}@acme.test`, emailVerified: true },
    });
    upstream.addAccount({ sub: 'invited-4', email: `${local}@acme.test`, email_verified: true, name: 'Invited' });
    upstream.signInAs('invited-4');
    const result = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect((await session(result.session).get('/api/v1/users/me')).body.id).toBe(invited.id);
  });
});

describe('what the provider may not do', () => {
  it("sign in an address outside the connection's domains", async () => {
    upstream.addAccount({ sub: 'mallory-5', email: other.owner.email, email_verified: true, name: 'Mallory' });
    upstream.signInAs('mallory-5');
    const result = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect(errorOf(result.location)).toBe('email_outside_domains');
    expect(result.session).toBeNull();
  });

  it('use a sign-in twice, from another browser, or 20 times at once', async () => {
    upstream.signInAs('jane-1');
    const used = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect(used.session).toMatch(/^tss_/);
    expect(errorOf(await replayCallback(server.url, used, ca))).toBe('expired_request');

    // The callback reached by a browser without the cookie that started the sign-in.
    const jar: CookieJar = new Map();
    const host = new URL(server.url).host;
    const callback = await followUntil(
      `${server.url}/sso/${connectionId}/start`,
      (u) => u.host === host && u.pathname.endsWith('/callback'),
      { ca: ca.caPem, jar },
    );
    const stranger = await browserGet(new URL(callback), { ca: ca.caPem, jar: new Map() });
    expect(errorOf(stranger.location!)).toBe('wrong_browser');

    const racing = await followUntil(
      `${server.url}/sso/${connectionId}/start`,
      (u) => u.host === host && u.pathname.endsWith('/callback'),
      { ca: ca.caPem, jar },
    );
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => {
        const copy: CookieJar = new Map([...jar].map(([h, c]) => [h, new Map(c)]));
        return browserGet(new URL(racing), { ca: ca.caPem, jar: copy }).then((a) => ({ a, copy }));
      }),
    );
    const signedIn = answers.filter(
      ({ copy }) => copy.get(host)?.get('tessera_session') !== jar.get(host)?.get('tessera_session'),
    );
    expect(signedIn).toHaveLength(1);
    expect(answers.filter(({ a }) => errorOf(a.location ?? '') === 'expired_request')).toHaveLength(19);
  });

  it('sign anyone in once the connection is switched off, also a sign-in already at the provider', async () => {
    upstream.signInAs('jane-1');
    const jar = new Map();
    const host = new URL(server.url).host;
    const callback = await followUntil(
      `${server.url}/sso/${connectionId}/start`,
      (u) => u.host === host && u.pathname.endsWith('/callback'),
      { ca: ca.caPem, jar },
    );
    expect((await acme.owner.api.patch(`/api/v1/connections/${connectionId}`, { enabled: false })).status).toBe(200);
    try {
      const answer = await browserGet(new URL(callback), { ca: ca.caPem, jar });
      expect(errorOf(answer.location!)).toBe('disabled');
      const start = await browserGet(new URL(`${server.url}/sso/${connectionId}/start`), {
        ca: ca.caPem,
        jar: new Map(),
      });
      expect(errorOf(start.location!)).toBe('disabled');
    } finally {
      await acme.owner.api.patch(`/api/v1/connections/${connectionId}`, { enabled: true });
    }
  });
});

describe("an admin's test sign-in", () => {
  it('shows the claims received to that admin only, and signs nobody in', async () => {
    upstream.addAccount({
      sub: 'tess-6',
      email: 'tess@acme.test',
      email_verified: true,
      name: 'Tess',
      groups: ['acme-admins'],
    });
    upstream.signInAs('tess-6');
    const host = new URL(server.url).host;
    const jar = new Map([[host, new Map([['tessera_session', acme.admin.token]])]]);
    const result = await ssoSignInThroughOidc(server.url, connectionId, ca, { query: { test: '1' }, jar });
    const match = /^\/admin\/settings\/sso\/test\/([A-Za-z0-9_-]+)$/.exec(new URL(result.location).pathname);
    expect(match, result.location).not.toBeNull();
    const query =
      'query($id: String!) { ssoTestResult(id: $id) { connectionName subject email emailVerified name role claims } }';
    const read = await acme.admin.api.post('/graphql', { query, variables: { id: match![1] } });
    expect(read.body.data.ssoTestResult).toMatchObject({
      connectionName: 'Acme IdP',
      subject: 'tess-6',
      email: 'tess@acme.test',
      role: 'admin',
    });
    expect(read.body.data.ssoTestResult.claims).toMatchObject({ groups: ['acme-admins'] });
    expect(await server.base.db.user.count({ where: { email: 'tess@acme.test' } })).toBe(0);
    // Another admin, of this organization or another, reads nothing.
    for (const stranger of [acme.owner, other.owner]) {
      const theirs = await stranger.api.post('/graphql', { query, variables: { id: match![1] } });
      expect(theirs.body.errors?.[0]?.extensions?.code).toBe('not_found');
    }
  });

  it("is refused to another organization's admin and to a member", async () => {
    const host = new URL(server.url).host;
    for (const person of [other.owner, acme.member]) {
      const jar = new Map([[host, new Map([['tessera_session', person.token]])]]);
      const start = await browserGet(new URL(`${server.url}/sso/${connectionId}/start?test=1`), { ca: ca.caPem, jar });
      // A test's refusal goes back to the settings page it started from, with its reason.
      const back = new URL(start.location!);
      expect(back.pathname, person.email).toBe('/admin/settings/sso');
      expect(back.searchParams.get('test_error'), person.email).toMatch(/^(unknown_connection|forbidden)$/);
    }
  });
});
