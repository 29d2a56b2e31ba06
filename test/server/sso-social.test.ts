// Platform-wide "Sign in with GitHub" and with an OpenID Connect provider (docs/architecture.md#single-sign-on),
// against a fake GitHub Enterprise Server and a real oidc-provider over HTTPS: only platform admins add them; /login
// lists them; a new person with a verified address gets an account of no organization; an existing account is never
// merged by itself, only connected by its signed-in owner.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startGithubUpstream, type GithubUpstream } from '../helpers/github-upstream.ts';
import { browserGet, startOidcUpstream, type CookieJar, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { ssoSignInThroughOidc } from '../helpers/sso.ts';

let server: TestServer;
let ca: TestCa;
let github: GithubUpstream;
let google: OidcUpstream;
let platform: Client;
let tenant: Tenant;
let connectionId: string;

const errorOf = (location: string) => new URL(location, 'http://x').searchParams.get('sso_error');
/** A refused connecting ends on the security page, where it started, with its reason. */
const linkErrorOf = (location: string) => {
  const url = new URL(location, 'http://x');
  return url.pathname === '/portal/security' ? url.searchParams.get('link_error') : `(went to ${url.pathname})`;
};
const asSession = (token: string | null) => client(server.url, { token: token ?? undefined });
const withSession = (token: string): CookieJar =>
  new Map([[new URL(server.url).host, new Map([['tessera_session', token]])]]);

beforeAll(async () => {
  ca = makeTestCa(['github.test', 'accounts.test']);
  github = await startGithubUpstream(ca);
  google = await startOidcUpstream(ca, { host: 'accounts.test' });
  server = await startTestServer({
    env: { WEBHOOK_CA_FILE: ca.caFile },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, platform);
  const created = await platform.post('/api/v1/connections', {
    type: 'github',
    platform: true,
    name: 'GitHub',
    issuer: github.origin,
    client_id: github.clientId,
    client_secret: github.clientSecret,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect(created.body).toMatchObject({ organization_id: null, type: 'github', has_client_secret: true });
  connectionId = created.body.id;
});
afterAll(async () => {
  await server?.stop();
  await github?.close();
  await google?.close();
  ca?.remove();
});

describe('a platform-wide provider', () => {
  it('is added by platform admins only, and listed for /login', async () => {
    const body = { type: 'github', platform: true, name: 'Rogue', client_id: 'x', client_secret: 'y' };
    expect((await tenant.owner.api.post('/api/v1/connections', body)).status).toBe(403);
    expect((await tenant.owner.api.get(`/api/v1/connections/${connectionId}`)).status).toBe(404);
    const org = await tenant.owner.api.post('/api/v1/connections', {
      type: 'oidc',
      name: 'x',
      issuer: github.origin,
      client_id: 'a',
      client_secret: 'b',
      platform: true,
      domains: ['a.test'],
    });
    expect(org.status).toBe(403);
    const listed = await client(server.url).post('/graphql', { query: '{ socialProviders { id name type } }' });
    expect(listed.body.data.socialProviders).toEqual([{ id: connectionId, name: 'GitHub', type: 'github' }]);
    const platformList = await platform.get('/api/v1/connections?platform=true');
    expect(platformList.body.connections.map((c: { id: string }) => c.id)).toEqual([connectionId]);
  });

  it('signs a new person in with their verified primary address, in no organization', async () => {
    github.addUser({
      id: 101,
      login: 'octo',
      name: 'Octo Cat',
      email: null,
      emails: [{ email: 'octo@users.test', primary: true, verified: true }],
    });
    github.signInAs('octo');
    const result = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect(result.session, result.location).toMatch(/^tss_/);
    const me = await asSession(result.session).get('/api/v1/users/me');
    expect(me.body).toMatchObject({ email: 'octo@users.test', name: 'Octo Cat', email_verified: true });
    expect((await asSession(result.session).get('/api/v1/auth/session')).body.organization).toBeNull();
    // The same GitHub account signs in to the same person.
    const again = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect((await asSession(again.session).get('/api/v1/users/me')).body.id).toBe(me.body.id);
  });

  it('refuses an address GitHub has not verified', async () => {
    github.addUser({
      id: 102,
      login: 'unsure',
      name: null,
      email: 'unsure@users.test',
      emails: [{ email: 'unsure@users.test', primary: true, verified: false }],
    });
    github.signInAs('unsure');
    const result = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect(errorOf(result.location)).toBe('unverified_email');
    expect(result.session).toBeNull();
  });
});

describe('an existing account', () => {
  it('is never taken over by a GitHub account with its address; its owner connects GitHub while signed in, and can disconnect it', async () => {
    const member = tenant.member;
    github.addUser({
      id: 103,
      login: 'member-gh',
      name: 'Member',
      email: null,
      emails: [{ email: member.email, primary: true, verified: true }],
    });
    github.signInAs('member-gh');
    const refused = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect(errorOf(refused.location)).toBe('account_exists');
    expect(refused.session).toBeNull();

    const linked = await ssoSignInThroughOidc(server.url, connectionId, ca, {
      query: { link: '1' },
      jar: withSession(member.token),
    });
    expect(new URL(linked.location).pathname + new URL(linked.location).search).toBe('/portal/security?linked=1');
    const identities = await member.api.post('/graphql', { query: '{ mySsoIdentities { id name type } }' });
    expect(identities.body.data.mySsoIdentities).toEqual([expect.objectContaining({ name: 'GitHub', type: 'github' })]);

    const signedIn = await ssoSignInThroughOidc(server.url, connectionId, ca);
    expect((await asSession(signedIn.session).get('/api/v1/users/me')).body.id).toBe(member.id);

    // Another person cannot connect the same GitHub account to theirs.
    const taken = await ssoSignInThroughOidc(server.url, connectionId, ca, {
      query: { link: '1' },
      jar: withSession(tenant.admin.token),
    });
    expect(linkErrorOf(taken.location)).toBe('identity_in_use');

    const unlinked = await member.api.post('/graphql', {
      query: 'mutation($id: String!) { unlinkSsoIdentity(id: $id) }',
      variables: { id: identities.body.data.mySsoIdentities[0].id },
    });
    expect(unlinked.body.data.unlinkSsoIdentity).toBe(true);
    expect(errorOf((await ssoSignInThroughOidc(server.url, connectionId, ca)).location)).toBe('account_exists');
  });

  it('connecting needs a session', async () => {
    const start = await browserGet(new URL(`${server.url}/sso/${connectionId}/start?link=1`), {
      ca: ca.caPem,
      jar: new Map(),
    });
    expect(linkErrorOf(start.location!)).toBe('unauthenticated');
    expect(start.location).not.toContain(github.origin);
  });
});

describe('a platform-wide OpenID Connect provider', () => {
  it('signs in a new person whose address the provider verified, and refuses one it did not', async () => {
    const created = await platform.post('/api/v1/connections', {
      type: 'oidc',
      platform: true,
      name: 'Google',
      issuer: google.issuer,
      client_id: google.clientId,
      client_secret: google.clientSecret,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    google.redirectUris.add(created.body.callback_url);
    try {
      google.addAccount({ sub: 'g-1', email: 'ada@mail.test', email_verified: true, name: 'Ada' });
      google.signInAs('g-1');
      const result = await ssoSignInThroughOidc(server.url, created.body.id, ca);
      expect((await asSession(result.session).get('/api/v1/users/me')).body).toMatchObject({
        email: 'ada@mail.test',
        email_verified: true,
      });

      google.addAccount({ sub: 'g-2', email: 'bob@mail.test', email_verified: false, name: 'Bob' });
      google.signInAs('g-2');
      const refused = await ssoSignInThroughOidc(server.url, created.body.id, ca);
      expect(errorOf(refused.location)).toBe('unverified_email');
      expect(await server.base.db.user.count({ where: { email: 'bob@mail.test' } })).toBe(0);
    } finally {
      await platform.delete(`/api/v1/connections/${created.body.id}`);
    }
  });
});
