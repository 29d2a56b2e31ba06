// What mints a credential is a security boundary. An OAuth access token acts only in its client's organization and
// only until it expires: it accepts no invitation (that would become a session in another organization), and mints
// no API key, client secret or invitation link that would outlive it. Every check of a current password counts
// against the sign-in throttle of the account, wherever it is made.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client, type Reply } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { accessTokenOf, registerClient, type RegisteredClient } from '../helpers/oauth.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startGithubUpstream, type GithubUpstream } from '../helpers/github-upstream.ts';
import { browserGet, followUntil, type CookieJar } from '../helpers/oidc-upstream.ts';
import { ssoSignInThroughOidc } from '../helpers/sso.ts';

const REDIRECT = 'https://app.example.test/callback';

let server: TestServer;
let ca: TestCa;
/** The platform's "Sign in with GitHub", with the attacker's own GitHub account on it. */
let github: GithubUpstream;
let platform: Client;
let a: Tenant;
let b: Tenant;
/** A client of organization A that may be given `api` without consent, as a marketplace install is. */
let app: RegisteredClient;

beforeAll(async () => {
  ca = makeTestCa(['github.test']);
  github = await startGithubUpstream(ca);
  server = await startTestServer({
    env: { WEBHOOK_CA_FILE: ca.caFile },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  a = await createTenant(server.url, platform, 'Tenant A');
  b = await createTenant(server.url, platform, 'Tenant B');
  app = await registerClient(a.owner.api, {
    name: 'App of A',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'profile', 'email', 'api'],
    consent_required: false,
  });
});
afterAll(async () => {
  await server?.stop();
  await github?.close();
  ca?.remove();
});

const tokenOf = async (person: Person) =>
  client(server.url, { token: await accessTokenOf(server.url, person, app, REDIRECT, 'openid api') });
const graphql = (api: Client, query: string, variables?: Record<string, unknown>) =>
  api.post('/graphql', { query, variables });

function expectRefused(reply: Reply, label: string) {
  expect(reply.status, `${label}: ${JSON.stringify(reply.body)}`).toBe(403);
  expect(reply.body.error, label).toBe('forbidden');
  expect(JSON.stringify(reply.body), label).not.toMatch(/tss_|tsk_|tsks_|tscs_|tsi_/);
}

describe('an access token and invitations', () => {
  it('cannot accept an invitation into another organization: no session, no membership, the invitation still pending', async () => {
    // The report's setup: the user holds an `openid api` token of A's client; B invites the user's address.
    const person = await addPerson(server.url, a.owner.api, a.id, 'member', 'holder');
    const api = await tokenOf(person);
    const invitation = await b.owner.api.post(`/v1/organizations/${b.id}/invitations`, {
      email: person.email,
      role: 'admin',
    });
    expect(invitation.status).toBe(201);
    const sessionsBefore = await server.base.db.session.count({ where: { userId: person.id } });

    const rest = await api.post('/api/v1/invitations/accept', { token: invitation.body.token });
    const gql = await graphql(api, 'mutation($t: String!) { acceptInvitation(input: { token: $t }) { __typename } }', {
      t: invitation.body.token,
    });

    expectRefused(rest, 'REST');
    expect(gql.body.data).toBeNull();
    expect(gql.body.errors[0].extensions.code).toBe('forbidden');
    expect(await server.base.db.session.count({ where: { userId: person.id } })).toBe(sessionsBefore);
    expect(
      await server.base.db.membership.findUnique({
        where: { userId_organizationId: { userId: person.id, organizationId: b.id } },
      }),
    ).toBeNull();
    const listed = (await b.owner.api.get(`/v1/organizations/${b.id}/invitations`)).body.invitations.find(
      (i: { id: string }) => i.id === invitation.body.id,
    );
    expect(listed.status).toBe('pending');
    // The token still works where it belongs, and nowhere else.
    expect((await api.get('/api/v1/users/me')).status).toBe(200);
    expect((await api.get(`/v1/organizations/${b.id}/members`)).status).toBe(404);

    // The person accepts as a person does: signed in (a first-party session), or with the password.
    const own = await signIn(server.url, person.email, PASSWORD);
    const accepted = await own.api.post('/api/v1/invitations/accept', { token: invitation.body.token });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.organization).toMatchObject({ id: b.id, role: 'admin' });
  });

  it('cannot accept with the password either: the token is refused before the password is looked at', async () => {
    const person = await addPerson(server.url, a.owner.api, a.id, 'member', 'with-password');
    const api = await tokenOf(person);
    const invitation = await b.owner.api.post(`/v1/organizations/${b.id}/invitations`, {
      email: person.email,
      role: 'member',
    });

    expectRefused(
      await api.post('/api/v1/invitations/accept', { token: invitation.body.token, password: PASSWORD }),
      'with password',
    );
    expect(await server.base.db.membership.count({ where: { userId: person.id, organizationId: b.id } })).toBe(0);
  });
});

describe('an access token with the api scope mints no credential', () => {
  let owner: Person;
  let api: Client;

  beforeAll(async () => {
    owner = await addPerson(server.url, a.owner.api, a.id, 'owner', 'token-owner');
    api = await tokenOf(owner);
  });

  it('makes no API key, client, client secret or invitation, over REST', async () => {
    const keysBefore = await server.base.db.apiKey.count();
    const clientsBefore = await server.base.db.oAuthClient.count();
    const invitationsBefore = await server.base.db.invitation.count();
    const secretBefore = (await server.base.db.oAuthClient.findUniqueOrThrow({ where: { id: app.id } })).secretHash;

    expectRefused(await api.post('/api/v1/api-keys', { name: 'escalation', role: 'admin' }), 'api key');
    expectRefused(
      await api.post('/api/v1/api-keys', { name: 'escalation', role: 'admin', organization_id: a.id }),
      'api key in its organization',
    );
    expectRefused(
      await api.post('/api/v1/oauth-clients', {
        name: 'Rogue',
        redirect_uris: [REDIRECT],
        allowed_scopes: ['openid', 'api'],
        consent_required: false,
      }),
      'client',
    );
    expectRefused(await api.post(`/api/v1/oauth-clients/${app.id}/rotate-secret`), 'rotate');
    expectRefused(
      await api.post(`/v1/organizations/${a.id}/invitations`, {
        email: `rogue-${randomBytes(3).toString('hex')}@example.test`,
        role: 'owner',
      }),
      'invitation',
    );

    expect(await server.base.db.apiKey.count()).toBe(keysBefore);
    expect(await server.base.db.oAuthClient.count()).toBe(clientsBefore);
    expect(await server.base.db.invitation.count()).toBe(invitationsBefore);
    // The client's secret is unchanged: the app still exchanges codes with it.
    expect((await server.base.db.oAuthClient.findUniqueOrThrow({ where: { id: app.id } })).secretHash).toBe(
      secretBefore,
    );
    await expect(accessTokenOf(server.url, owner, app, REDIRECT, 'openid api')).resolves.toMatch(/\./);
  });

  it('makes none over GraphQL either', async () => {
    const key = await graphql(api, 'mutation { createApiKey(input: { name: "gql", role: admin }) { __typename } }');
    expect(key.body.errors?.[0]?.extensions.code ?? key.body.data?.createApiKey?.code).toBe('forbidden');
    const rotated = await graphql(api, `mutation { rotateOAuthClientSecret(id: "${app.id}") { __typename } }`);
    expect(JSON.stringify(rotated.body)).toMatch(/forbidden/);
    expect(JSON.stringify(rotated.body)).not.toMatch(/tscs_/);
  });

  it('changes neither the password nor the e-mail address, even with the current password', async () => {
    const password = await api.patch('/api/v1/users/me', {
      current_password: PASSWORD,
      password: 'a brand new password',
    });
    const email = await api.patch('/api/v1/users/me', {
      current_password: PASSWORD,
      email: `taken-over-${randomBytes(3).toString('hex')}@evil.test`,
    });

    expectRefused(password, 'password');
    expectRefused(email, 'email');
    expect((await signIn(server.url, owner.email, PASSWORD)).login.user.email).toBe(owner.email);
    // The profile is still the token's to change.
    expect((await api.patch('/api/v1/users/me', { name: 'Renamed by the app' })).status).toBe(200);
  });
});

describe('an access token and platform sign-in providers', () => {
  it("cannot connect the app's own GitHub account to its user: refused, nothing linked, and GitHub signs in nobody's account as the user", async () => {
    const connection = await platform.post('/api/v1/connections', {
      type: 'github',
      platform: true,
      name: 'GitHub',
      issuer: github.origin,
      client_id: github.clientId,
      client_secret: github.clientSecret,
    });
    expect(connection.status, JSON.stringify(connection.body)).toBe(201);
    const victim = await addPerson(server.url, a.owner.api, a.id, 'admin', 'sso-victim');
    const api = await tokenOf(victim);
    github.addUser({
      id: 9001,
      login: 'app-operator',
      name: 'App operator',
      email: null,
      emails: [{ email: 'operator@apps.test', primary: true, verified: true }],
    });
    github.signInAs('app-operator');

    // The report: the app starts a link for its token's user over GraphQL, then walks the browser part itself with
    // its own GitHub account.
    const start = await graphql(
      api,
      'mutation($input: StartSsoSignInInput!) { startSsoSignIn(input: $input) { __typename ... on SsoStart { url browserToken } } }',
      { input: { connectionId: connection.body.id, link: true } },
    );
    const departure = start.body.data?.startSsoSignIn;
    if (departure?.browserToken) {
      const jar: CookieJar = new Map([[new URL(server.url).host, new Map([['tessera_sso', departure.browserToken]])]]);
      const callback = await followUntil(departure.url, (u) => u.pathname === `/sso/${connection.body.id}/callback`, {
        ca: ca.caPem,
        jar,
      });
      await browserGet(new URL(callback), { ca: ca.caPem, jar });
    }
    // The browser route reads a Bearer credential too.
    const viaRoute = await api.get(`/sso/${connection.body.id}/start?link=1`);
    const signedIn = await ssoSignInThroughOidc(server.url, connection.body.id, ca);
    const signedInAs = signedIn.session
      ? (await client(server.url, { token: signedIn.session }).get('/api/v1/users/me')).body.id
      : null;

    // Nothing links the app's GitHub account to the victim, and signing in with it is not the victim's session.
    expect(await server.base.db.ssoIdentity.count({ where: { userId: victim.id } })).toBe(0);
    expect(signedInAs).not.toBe(victim.id);
    expect(start.body.errors?.[0]?.extensions.code, JSON.stringify(start.body)).toBe('forbidden');
    expect(start.body.data).toBeNull();
    expect(viaRoute.status).toBe(303);
    expect(viaRoute.headers.get('location')).toBe('/portal/security?link_error=forbidden');
    expect(await server.base.db.ssoRequest.count({ where: { linkUserId: victim.id } })).toBe(0);
  });
});

describe('the current password check', () => {
  it('counts against the sign-in throttle: five wrong guesses, then 429 there and at login, right password included', async () => {
    const person = await addPerson(server.url, a.owner.api, a.id, 'member', 'guessed');
    const session = (await signIn(server.url, person.email, PASSWORD)).api;

    const guesses: number[] = [];
    for (let n = 0; n < 8; n++)
      guesses.push(
        (await session.patch('/api/v1/users/me', { email: `new-${n}@example.test`, current_password: `guess-${n}` }))
          .status,
      );

    expect(guesses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
    const right = await session.patch('/api/v1/users/me', {
      email: 'new-right@example.test',
      current_password: PASSWORD,
    });
    expect(right.status).toBe(429);
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(
      (await client(server.url).post('/api/v1/auth/login', { email: person.email, password: PASSWORD })).status,
    ).toBe(429);
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: person.id } })).email).toBe(person.email);
  });

  it('lets no more than five of twenty concurrent guesses be answered', async () => {
    const person = await addPerson(server.url, a.owner.api, a.id, 'member', 'burst');
    const session = (await signIn(server.url, person.email, PASSWORD)).api;

    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        session
          .patch('/api/v1/users/me', { password: 'another long password', current_password: `burst-${n}` })
          .then((r) => r.status),
      ),
    );

    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
  });
});
