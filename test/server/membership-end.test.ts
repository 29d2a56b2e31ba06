// A membership ends everything issued for it, at once (docs/architecture.md#identity-sessions-and-tokens): removing a member or deleting the user revokes
// the grants, refresh and access tokens of the organization's OAuth clients, the API keys the user made there, and
// the organization its sessions act in; what was issued for another organization goes on working. An API key never
// outlives its creator's right to it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  decideConsent,
  exchangeCode,
  registerClient,
  sessionOf,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/callback';
const SCOPES = ['openid', 'email', 'offline_access', 'api'];

let server: TestServer;
let platform: Client;
let a: Tenant;
let b: Tenant;
let appOfA: RegisteredClient;
let appOfB: RegisteredClient;

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  a = await createTenant(server.url, platform, 'Tenant A');
  b = await createTenant(server.url, platform, 'Tenant B');
  appOfA = await registerClient(a.admin.api, { name: 'App of A', redirect_uris: [REDIRECT], allowed_scopes: SCOPES });
  appOfB = await registerClient(b.admin.api, { name: 'App of B', redirect_uris: [REDIRECT], allowed_scopes: SCOPES });
});
afterAll(() => server?.stop());

interface Tokens {
  access_token: string;
  refresh_token: string;
}

/** The code flow with consent, as `session`'s browser and `app`'s back end do it. */
async function tokensFor(session: string, app: RegisteredClient): Promise<Tokens> {
  const params = {
    client_id: app.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: SCOPES.join(' '),
    nonce: 'n',
    state: 's',
  };
  let back = await authorize(server.url, session, params);
  if (back.pathname === '/consent') back = await decideConsent(server.url, session, back);
  const reply = await exchangeCode(server.url, app, codeFrom(back), REDIRECT);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

const credentials = (app: RegisteredClient) => ({ client_id: app.client_id, client_secret: app.client_secret });
const refresh = (app: RegisteredClient, token: string) =>
  tokenRequest(server.url, { grant_type: 'refresh_token', refresh_token: token, ...credentials(app) });
const introspect = (app: RegisteredClient, token: string) =>
  client(server.url).post('/oauth/introspect', new URLSearchParams({ token, ...credentials(app) }).toString(), {
    'content-type': 'application/x-www-form-urlencoded',
  });
const userinfo = (accessToken: string) => client(server.url, { token: accessToken }).get('/oauth/userinfo');

/** Invites an existing person into `tenant` as `role`; it accepts with its own session. */
async function join(tenant: Tenant, person: Person, role: 'admin' | 'member') {
  const invite = await tenant.owner.api.post(`/v1/organizations/${tenant.id}/invitations`, {
    email: person.email,
    role,
  });
  expect(invite.status).toBe(201);
  expect((await person.api.post('/api/v1/invitations/accept', { token: invite.body.token })).status).toBe(200);
}

async function apiKeyOf(person: Person, organizationId: string) {
  const reply = await person.api.post('/api/v1/api-keys', {
    name: `key of ${person.email}`,
    role: 'admin',
    organization_id: organizationId,
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return client(server.url, { apiKey: { key: reply.body.key, secret: reply.body.secret } });
}

describe('DELETE /v1/organizations/{id}/members/{user_id}', () => {
  it("ends the member's OAuth access, API keys and sessions in that organization, and only there", async () => {
    const leo = await addPerson(server.url, a.owner.api, a.id, 'admin', 'leo');
    await join(b, leo, 'member');
    const session = await sessionOf(server.url, leo);
    const inA = await tokensFor(session, appOfA);
    const inB = await tokensFor(session, appOfB);
    const key = await apiKeyOf(leo, a.id);
    expect((await key.get(`/v1/organizations/${a.id}`)).status).toBe(200);
    expect((await introspect(appOfA, inA.access_token)).body.active).toBe(true);

    const removed = await a.owner.api.delete(`/v1/organizations/${a.id}/members/${leo.id}`);
    expect(removed.status).toBe(204);

    // Refreshing, introspection, userinfo and the REST interface all refuse what was issued for A.
    const refreshed = await refresh(appOfA, inA.refresh_token);
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe('invalid_grant');
    expect((await introspect(appOfA, inA.access_token)).body).toEqual({ active: false });
    expect((await introspect(appOfA, inA.refresh_token)).body).toEqual({ active: false });
    expect((await userinfo(inA.access_token)).status).toBe(401);
    expect((await client(server.url, { token: inA.access_token }).get('/api/v1/users/me')).status).toBe(401);
    expect((await key.get(`/v1/organizations/${a.id}`)).status).toBe(401);
    expect(await server.base.db.session.count({ where: { userId: leo.id, organizationId: a.id } })).toBe(0);
    // The remembered consent went with it: the app of A is no longer among Leo's connected apps.
    const apps = await client(server.url, { token: session }).post('/graphql', {
      query: 'query { connectedApps { clientId } }',
    });
    expect(apps.body.data.connectedApps).toEqual([{ clientId: appOfB.client_id }]);

    // What was issued for B goes on working.
    expect((await userinfo(inB.access_token)).status).toBe(200);
    expect((await refresh(appOfB, inB.refresh_token)).status).toBe(200);
    expect((await leo.api.get('/api/v1/users/me')).status).toBe(200);
  });
});

describe('deleting an account', () => {
  it('revokes the API keys the user made (DELETE /api/v1/users/me)', async () => {
    const creator = await addPerson(server.url, a.owner.api, a.id, 'admin', 'self-deleter');
    const key = await apiKeyOf(creator, a.id);
    const tokens = await tokensFor(await sessionOf(server.url, creator), appOfA);
    const rowsOf = async () => ({
      codes: await server.base.db.authorizationCode.count({ where: { userId: creator.id } }),
      refreshTokens: await server.base.db.refreshToken.count({ where: { userId: creator.id } }),
    });
    expect(await rowsOf()).toEqual({ codes: 1, refreshTokens: 1 });

    expect((await creator.api.delete('/api/v1/users/me', { password: PASSWORD })).status).toBe(204);
    // Gone with the user's grants, their only foreign key.
    expect(await rowsOf()).toEqual({ codes: 0, refreshTokens: 0 });

    expect((await key.get(`/v1/organizations/${a.id}`)).status).toBe(401);
    expect((await key.post('/api/v1/api-keys', { name: 'successor', role: 'admin' })).status).toBe(401);
    expect(
      (await key.post(`/v1/organizations/${a.id}/invitations`, { email: 'heir@example.test', role: 'admin' })).status,
    ).toBe(401);
    expect((await refresh(appOfA, tokens.refresh_token)).body.error).toBe('invalid_grant');
    expect((await userinfo(tokens.access_token)).status).toBe(401);
    const revocations = await server.base.db.auditLog.findMany({
      where: { organizationId: a.id, action: 'api_key.revoke' },
    });
    expect(revocations).toContainEqual(expect.objectContaining({ details: { reason: 'creator_deleted' } }));
  });

  it('revokes them when a platform admin deletes the user (DELETE /v1/users/{id})', async () => {
    const creator = await addPerson(server.url, a.owner.api, a.id, 'admin', 'deleted');
    const key = await apiKeyOf(creator, a.id);

    expect((await platform.delete(`/v1/users/${creator.id}`)).status).toBe(204);

    expect((await key.get('/api/v1/api-keys')).status).toBe(401);
    const remaining = await a.owner.api.get('/api/v1/api-keys');
    expect(remaining.body.api_keys.map((k: { created_by: string | null }) => k.created_by)).not.toContain(creator.id);
  });
});
