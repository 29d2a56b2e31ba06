// OAuth client management: registration over REST and GraphQL, list / read / update / rotate the secret /
// disable / delete under /api/v1/oauth-clients, input validation, tenant isolation, roles, audit rows and events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client as restClient, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import {
  authorize,
  codeFrom,
  exchangeCode,
  registerClient,
  sessionOf,
  tokenRequest,
  type ClientCredentials,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://app.example.test/callback';

let server: TestServer;
let admin: Client;
let tenant: Tenant;
let otherTenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  [tenant, otherTenant] = await Promise.all([createTenant(server.url, admin), createTenant(server.url, admin)]);
});
afterAll(() => server?.stop());

const register = (api: Client, body: Record<string, unknown> = {}) =>
  registerClient(api, { name: 'Billing app', redirect_uris: [REDIRECT], allowed_scopes: ['openid', 'email'], ...body });

/**
 * Whether the token endpoint accepts these client credentials: with a bogus refresh token an authenticated
 * client gets invalid_grant, an unauthenticated one invalid_client.
 */
async function clientAuth(clientId: string, secret: string) {
  const reply = await tokenRequest(server.url, {
    grant_type: 'refresh_token',
    refresh_token: 'tsr_bogus',
    client_id: clientId,
    client_secret: secret,
  });
  return reply.body.error as string;
}

/** A member's access token for `c` through the code flow (the client must not ask for consent). */
async function accessTokenFor(c: ClientCredentials, person = tenant.member): Promise<string> {
  const session = await sessionOf(server.url, person);
  const location = await authorize(server.url, session, {
    client_id: c.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid email',
    state: 's',
    nonce: 'n',
  });
  const reply = await exchangeCode(server.url, c, codeFrom(location), REDIRECT);
  if (reply.status !== 200) throw new Error(`token exchange failed: ${JSON.stringify(reply.body)}`);
  return reply.body.access_token;
}

const userinfoStatus = async (accessToken: string) =>
  (await restClient(server.url, { token: accessToken }).get('/oauth/userinfo')).status;

describe('registration over REST', () => {
  it('answers 201 with the client, its client_id and a secret shown only this once', async () => {
    const reply = await tenant.admin.api.post('/api/v1/oauth-clients', {
      name: 'Billing app',
      description: 'Invoices and receipts',
      redirect_uris: [REDIRECT, 'http://127.0.0.1:8080/cb', 'http://localhost/cb', 'com.example.app:/oauth'],
      allowed_origins: ['https://app.example.test'],
      allowed_scopes: ['openid', 'email', 'profile'],
    });
    expect(reply.status).toBe(201);
    expectMatchesOpenApi('POST', '/api/v1/oauth-clients', reply);
    expect(reply.body).toMatchObject({
      name: 'Billing app',
      description: 'Invoices and receipts',
      organization_id: tenant.id,
      redirect_uris: [REDIRECT, 'http://127.0.0.1:8080/cb', 'http://localhost/cb', 'com.example.app:/oauth'],
      allowed_origins: ['https://app.example.test'],
      allowed_scopes: ['openid', 'email', 'profile'],
      grant_types: ['authorization_code', 'refresh_token'],
      id_token_signed_response_alg: 'RS256',
      enabled: true,
      consent_required: true,
    });
    expect(reply.body.id).toBeTruthy();
    expect(reply.body.client_id).toMatch(/^\S{16,}$/);
    expect(reply.body.client_secret).toMatch(/^\S{32,}$/);
    expect(Date.parse(reply.body.created_at)).not.toBeNaN();

    // Only a hash is stored, and reading the client never shows the secret again.
    const row = await server.base.db.oAuthClient.findUniqueOrThrow({ where: { id: reply.body.id } });
    expect(JSON.stringify(row)).not.toContain(reply.body.client_secret);
    const read = await tenant.admin.api.get(`/api/v1/oauth-clients/${reply.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('client_secret');
    expect(JSON.stringify(read.body)).not.toContain(reply.body.client_secret);

    expect(await clientAuth(reply.body.client_id, reply.body.client_secret)).toBe('invalid_grant');
  });

  it('lets a platform admin register for a tenant with organization_id', async () => {
    const created = await register(admin, { organization_id: tenant.id, name: 'Operator-made' });
    expect(created.organization_id).toBe(tenant.id);
  });

  it('registers a machine client with only the client_credentials grant and no redirect URIs', async () => {
    const reply = await tenant.admin.api.post('/api/v1/oauth-clients', {
      name: 'Nightly sync',
      redirect_uris: [],
      grant_types: ['client_credentials'],
      allowed_scopes: ['reports'],
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({ grant_types: ['client_credentials'], redirect_uris: [] });
    const issued = await tokenRequest(server.url, {
      grant_type: 'client_credentials',
      client_id: reply.body.client_id,
      client_secret: reply.body.client_secret,
    });
    expect(issued.status).toBe(200);
    expect(issued.body.scope).toBe('reports');
  });
});

describe('registration over GraphQL', () => {
  it('createOAuthClient returns the client and its secret', async () => {
    const reply = await tenant.admin.api.post('/graphql', {
      query: `mutation($input: CreateOAuthClientInput!) { createOAuthClient(input: $input) {
        __typename ... on OAuthClientWithSecret { clientSecret client { id clientId organizationId name redirectUris allowedScopes enabled consentRequired } } } }`,
      variables: {
        input: { name: 'GraphQL app', redirectUris: [REDIRECT], allowedScopes: ['openid'], consentRequired: false },
      },
    });
    expect(reply.status).toBe(200);
    const result = reply.body.data.createOAuthClient;
    expect(result.__typename).toBe('OAuthClientWithSecret');
    expect(result.client).toMatchObject({
      organizationId: tenant.id,
      name: 'GraphQL app',
      redirectUris: [REDIRECT],
      allowedScopes: ['openid'],
      enabled: true,
      consentRequired: false,
    });
    expect(await clientAuth(result.client.clientId, result.clientSecret)).toBe('invalid_grant');

    const listed = await tenant.admin.api.post('/graphql', {
      query: '{ oauthClients { items { clientId } nextCursor } }',
    });
    expect(listed.body.data.oauthClients.items.map((c: { clientId: string }) => c.clientId)).toContain(
      result.client.clientId,
    );
  });

  it('reports invalid input as a ValidationError with field details', async () => {
    const reply = await tenant.admin.api.post('/graphql', {
      query: `mutation($input: CreateOAuthClientInput!) { createOAuthClient(input: $input) {
        __typename ... on UserError { code message details { path message } } } }`,
      variables: { input: { name: 'Bad', redirectUris: ['http://app.example.test/cb'], allowedScopes: ['openid'] } },
    });
    expect(reply.status).toBe(200);
    const result = reply.body.data.createOAuthClient;
    expect(result).toMatchObject({ __typename: 'UserError', code: 'invalid_request' });
    expect(result.details.map((d: { path: string }) => d.path)).toEqual(['redirectUris.0']);
  });
});

describe('validation', () => {
  // The details name the fields as the REST body spells them (snake_case), with the index of a bad list item.
  const cases: [string, Record<string, unknown>, string][] = [
    [
      'an http redirect URI on a non-loopback host',
      { redirect_uris: ['http://app.example.test/cb'] },
      'redirect_uris.0',
    ],
    [
      'a redirect URI with a fragment',
      { redirect_uris: [REDIRECT, 'https://app.example.test/cb#frag'] },
      'redirect_uris.1',
    ],
    ['a relative redirect URI', { redirect_uris: ['/cb'] }, 'redirect_uris.0'],
    ['an unknown scope', { allowed_scopes: ['openid', 'Not A Scope!'] }, 'allowed_scopes.1'],
    ['empty allowed_scopes', { allowed_scopes: [] }, 'allowed_scopes'],
    ['an origin with a path', { allowed_origins: ['https://app.example.test/path'] }, 'allowed_origins.0'],
    ['an unknown grant type', { grant_types: ['password'] }, 'grant_types.0'],
    ['an unknown ID token algorithm', { id_token_signed_response_alg: 'HS256' }, 'id_token_signed_response_alg'],
    ['the authorization_code grant without redirect URIs', { redirect_uris: [] }, 'redirect_uris'],
    ['a missing name', { name: undefined }, 'name'],
    ['missing redirect_uris', { redirect_uris: undefined }, 'redirect_uris'],
  ];
  for (const [what, change, path] of cases) {
    it(`refuses ${what} with 400 and details at ${path}`, async () => {
      const body: Record<string, unknown> = {
        name: 'Invalid app',
        redirect_uris: [REDIRECT],
        allowed_scopes: ['openid'],
        ...change,
      };
      for (const [k, v] of Object.entries(body)) if (v === undefined) delete body[k];
      const reply = await tenant.admin.api.post('/api/v1/oauth-clients', body);
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expectMatchesOpenApi('POST', '/api/v1/oauth-clients', reply);
      expect(reply.body).toMatchObject({ error: 'invalid_request', error_description: expect.any(String) });
      expect(reply.body.details.map((d: { path: string }) => d.path)).toEqual([path]);
      expect(typeof reply.body.details[0].message).toBe('string');
    });
  }

  it('refuses the same problems on update', async () => {
    const c = await register(tenant.admin.api);
    const reply = await tenant.admin.api.patch(`/api/v1/oauth-clients/${c.id}`, {
      redirect_uris: ['https://app.example.test/cb#x'],
    });
    expect(reply.status).toBe(400);
    expect(reply.body.details.map((d: { path: string }) => d.path)).toEqual(['redirect_uris.0']);
    const empty = await tenant.admin.api.patch(`/api/v1/oauth-clients/${c.id}`, { allowed_scopes: [] });
    expect(empty.status).toBe(400);
    expect(empty.body.details.map((d: { path: string }) => d.path)).toEqual(['allowed_scopes']);
  });
});

describe('list, read, update', () => {
  it("lists the organization's clients and reads one by id or client_id", async () => {
    const c = await register(tenant.admin.api, { name: 'Listed app' });
    const list = await tenant.admin.api.get('/api/v1/oauth-clients');
    expect(list.status).toBe(200);
    expectMatchesOpenApi('GET', '/api/v1/oauth-clients', list);
    const ids = list.body.oauth_clients.map((x: { id: string }) => x.id);
    expect(ids).toContain(c.id);
    expect(list.body.oauth_clients.every((x: { organization_id: string }) => x.organization_id === tenant.id)).toBe(
      true,
    );
    // Neither the secret nor any field of it: the list never carries one.
    expect(JSON.stringify(list.body)).not.toMatch(/"client_secret"|tscs_/);

    const byId = await tenant.admin.api.get(`/api/v1/oauth-clients/${c.id}`);
    expect(byId.status).toBe(200);
    expectMatchesOpenApi('GET', `/api/v1/oauth-clients/${c.id}`, byId);
    expect(byId.body).toMatchObject({ id: c.id, client_id: c.client_id, name: 'Listed app' });
    const byClientId = await tenant.admin.api.get(`/api/v1/oauth-clients/${c.client_id}`);
    expect(byClientId.body.id).toBe(c.id);
  });

  it('updates the given fields only', async () => {
    const c = await register(tenant.admin.api, { name: 'Before' });
    const reply = await tenant.admin.api.patch(`/api/v1/oauth-clients/${c.id}`, {
      name: 'After',
      allowed_scopes: ['openid', 'profile'],
      consent_required: false,
    });
    expect(reply.status).toBe(200);
    expectMatchesOpenApi('PATCH', `/api/v1/oauth-clients/${c.id}`, reply);
    expect(reply.body).toMatchObject({
      id: c.id,
      name: 'After',
      allowed_scopes: ['openid', 'profile'],
      consent_required: false,
      redirect_uris: [REDIRECT],
      enabled: true,
    });
    expect((await tenant.admin.api.get(`/api/v1/oauth-clients/${c.id}`)).body.name).toBe('After');
  });
});

describe('rotating the secret', () => {
  it('shows a new secret once; the old one stops working', async () => {
    const c = await register(tenant.admin.api);
    const reply = await tenant.admin.api.post(`/api/v1/oauth-clients/${c.id}/rotate-secret`);
    expect(reply.status).toBe(200);
    expectMatchesOpenApi('POST', `/api/v1/oauth-clients/${c.id}/rotate-secret`, reply);
    expect(reply.body.client_id).toBe(c.client_id);
    expect(reply.body.client_secret).toBeTruthy();
    expect(reply.body.client_secret).not.toBe(c.client_secret);

    expect(await clientAuth(c.client_id, c.client_secret)).toBe('invalid_client');
    expect(await clientAuth(c.client_id, reply.body.client_secret)).toBe('invalid_grant');
  });
});

describe('disabling', () => {
  it('PATCH {enabled:false}: invalid_client "Client not found" at the token endpoint, its access tokens die and its refresh tokens end', async () => {
    const c = await register(tenant.admin.api, { consent_required: false });
    const accessToken = await accessTokenFor(c);
    expect(await userinfoStatus(accessToken)).toBe(200);
    const liveRefreshTokens = () => server.base.db.refreshToken.count({ where: { clientId: c.id, revokedAt: null } });
    expect(await liveRefreshTokens()).toBe(1);

    const reply = await tenant.admin.api.patch(`/api/v1/oauth-clients/${c.id}`, { enabled: false });
    expect(reply.status).toBe(200);
    expect(reply.body.enabled).toBe(false);
    // Ended with their grant (revokeGrants), not merely refused while the grant is revoked.
    expect(await liveRefreshTokens()).toBe(0);

    const refused = await tokenRequest(server.url, {
      grant_type: 'refresh_token',
      refresh_token: 'tsr_bogus',
      client_id: c.client_id,
      client_secret: c.client_secret,
    });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: 'invalid_client', error_description: 'Client not found' });
    expect(refused.headers.get('www-authenticate')).toBeTruthy();
    expect(await userinfoStatus(accessToken)).toBe(401);
    expect((await restClient(server.url, { token: accessToken }).get('/api/v1/users/me')).status).toBe(401);

    // Enabling it again does not bring the old tokens back.
    expect((await tenant.admin.api.patch(`/api/v1/oauth-clients/${c.id}`, { enabled: true })).status).toBe(200);
    expect(await clientAuth(c.client_id, c.client_secret)).toBe('invalid_grant');
    expect(await userinfoStatus(accessToken)).toBe(401);
  });
});

describe('deleting', () => {
  it('answers 204; the client is gone and so are its tokens', async () => {
    const c = await register(tenant.admin.api, {
      consent_required: false,
      allowed_scopes: ['openid', 'email', 'offline_access'],
    });
    const accessToken = await accessTokenFor(c);
    // A refresh token and an unused code as well: they go with the client's grants (their only foreign key).
    const session = await sessionOf(server.url, tenant.member);
    const offline = {
      client_id: c.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid offline_access',
      state: 's',
      nonce: 'n',
    };
    expect(
      (await exchangeCode(server.url, c, codeFrom(await authorize(server.url, session, offline)), REDIRECT)).body
        .refresh_token,
    ).toEqual(expect.any(String));
    codeFrom(await authorize(server.url, session, offline));
    const rowsOf = async () => ({
      codes: await server.base.db.authorizationCode.count({ where: { clientId: c.id } }),
      refreshTokens: await server.base.db.refreshToken.count({ where: { clientId: c.id } }),
    });
    const before = await rowsOf();
    expect(before.codes).toBe(3);
    expect(before.refreshTokens).toBeGreaterThan(0);
    const reply = await tenant.admin.api.delete(`/api/v1/oauth-clients/${c.id}`);
    expect(reply.status).toBe(204);
    expectMatchesOpenApi('DELETE', `/api/v1/oauth-clients/${c.id}`, reply);
    expect((await tenant.admin.api.get(`/api/v1/oauth-clients/${c.id}`)).status).toBe(404);
    expect((await tenant.admin.api.delete(`/api/v1/oauth-clients/${c.id}`)).status).toBe(404);
    expect(await clientAuth(c.client_id, c.client_secret)).toBe('invalid_client');
    expect(await userinfoStatus(accessToken)).toBe(401);
    expect(await rowsOf()).toEqual({ codes: 0, refreshTokens: 0 });
  });
});

describe('tenant isolation and roles', () => {
  it("answers 404 for another tenant's client, by id and by client_id, for every operation", async () => {
    const theirs = await register(otherTenant.admin.api, { name: 'Theirs' });
    const api = tenant.admin.api;
    for (const id of [theirs.id, theirs.client_id]) {
      const read = await api.get(`/api/v1/oauth-clients/${id}`);
      expect(read.status).toBe(404);
      expectMatchesOpenApi('GET', `/api/v1/oauth-clients/${id}`, read);
      expect((await api.patch(`/api/v1/oauth-clients/${id}`, { name: 'Hijacked' })).status).toBe(404);
      expect((await api.post(`/api/v1/oauth-clients/${id}/rotate-secret`)).status).toBe(404);
      expect((await api.delete(`/api/v1/oauth-clients/${id}`)).status).toBe(404);
    }
    expect((await api.get('/api/v1/oauth-clients')).body.oauth_clients.map((c: { id: string }) => c.id)).not.toContain(
      theirs.id,
    );
    // Nothing changed.
    const still = await otherTenant.admin.api.get(`/api/v1/oauth-clients/${theirs.id}`);
    expect(still.body.name).toBe('Theirs');
    expect(await clientAuth(theirs.client_id, theirs.client_secret)).toBe('invalid_grant');
    // Nor may a tenant register a client into another organization.
    const intoOther = await api.post('/api/v1/oauth-clients', {
      name: 'Planted',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      organization_id: otherTenant.id,
    });
    expect(intoOther.status).toBe(404);
  });

  it('members cannot register, list or change clients (403)', async () => {
    const c = await register(tenant.admin.api);
    const member = tenant.member.api;
    const create = await member.post('/api/v1/oauth-clients', {
      name: 'Sneaky',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
    });
    expect(create.status).toBe(403);
    expectMatchesOpenApi('POST', '/api/v1/oauth-clients', create);
    expect((await member.get('/api/v1/oauth-clients')).status).toBe(403);
    expect((await member.patch(`/api/v1/oauth-clients/${c.id}`, { enabled: false })).status).toBe(403);
    expect((await member.post(`/api/v1/oauth-clients/${c.id}/rotate-secret`)).status).toBe(403);
    expect((await member.delete(`/api/v1/oauth-clients/${c.id}`)).status).toBe(403);
    expect(await clientAuth(c.client_id, c.client_secret)).toBe('invalid_grant');
  });

  it('requires authentication (401)', async () => {
    const reply = await restClient(server.url).post('/api/v1/oauth-clients', {
      name: 'Anon',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
    });
    expect(reply.status).toBe(401);
    expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });
});

describe('audit log and events', () => {
  it('records create, update, rotate_secret and delete, and emits the created and deleted events of both lists', async () => {
    const c = await register(tenant.admin.api, { name: 'Audited app' });
    await tenant.admin.api.patch(`/api/v1/oauth-clients/${c.id}`, { name: 'Audited app 2' });
    await tenant.admin.api.post(`/api/v1/oauth-clients/${c.id}/rotate-secret`);
    expect((await tenant.admin.api.delete(`/api/v1/oauth-clients/${c.id}`)).status).toBe(204);

    const audit = await server.base.db.auditLog.findMany({
      where: { targetId: c.id },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    });
    expect(audit.map((a) => a.action)).toEqual([
      'oauth_client.create',
      'oauth_client.update',
      'oauth_client.rotate_secret',
      'oauth_client.delete',
    ]);
    for (const row of audit) {
      expect(row).toMatchObject({
        organizationId: tenant.id,
        actorId: tenant.admin.id,
        targetType: 'oauth_client',
        outcome: 'success',
      });
    }

    const events = await server.base.db.event.findMany({
      where: { organizationId: tenant.id, kind: { startsWith: 'oauth' } },
      orderBy: { createdAt: 'asc' },
    });
    const about = events.filter((e) => JSON.parse(e.body).data?.client?.id === c.id);
    expect(about.map((e) => e.kind).sort()).toEqual([
      'oauth.client.created',
      'oauth.client.deleted',
      'oauth_client.created',
      'oauth_client.deleted',
    ]);
    const created = about.find((e) => e.kind === 'oauth.client.created')!;
    expect(JSON.parse(created.body)).toMatchObject({
      organization: { id: tenant.id, name: tenant.name },
      data: { client: { id: c.id, clientId: c.client_id, name: 'Audited app' } },
    });
    expect(about.map((e) => e.body).join('\n')).not.toContain(c.client_secret);
  });
});
