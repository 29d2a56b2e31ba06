// An OAuth access token acts only within its scopes on REST and GraphQL (docs/architecture.md#identity-sessions-and-tokens): openid, profile and email read
// the user's own profile, organizations and session; everything else needs `api`, which a client gets only when its
// allowed_scopes list it. Without it: 403 insufficient_scope with the RFC 6750 3.1 challenge.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client, type Reply } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import {
  accessTokenOf,
  authorize,
  codeFrom,
  decideConsent,
  registerClient,
  sessionOf,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/callback';
const CHALLENGE = 'Bearer error="insufficient_scope", scope="api"';

let server: TestServer;
let tenant: Tenant;
/** May be given `api`; no consent asked. */
let trusted: RegisteredClient;
/** Never allowed `api`. */
let plain: RegisteredClient;

beforeAll(async () => {
  server = await startTestServer();
  const admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, admin);
  trusted = await registerClient(tenant.admin.api, {
    name: 'Trusted',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'profile', 'email', 'organization', 'api'],
    consent_required: false,
  });
  plain = await registerClient(tenant.admin.api, {
    name: 'Plain',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'profile', 'email'],
    consent_required: false,
  });
});
afterAll(() => server?.stop());

/** The real code flow for `person` through `c` with `scope`; a REST client carrying the access token. */
async function tokenClient(person: Person, scope: string, c: RegisteredClient = trusted): Promise<Client> {
  return client(server.url, { token: await accessTokenOf(server.url, person, c, REDIRECT, scope) });
}

function expectInsufficientScope(reply: Reply) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(403);
  expect(reply.body.error).toBe('insufficient_scope');
  expect(reply.headers.get('www-authenticate')).toBe(CHALLENGE);
}

const graphql = (api: Client, query: string, variables?: Record<string, unknown>) =>
  api.post('/graphql', { query, variables });

describe('an access token without the api scope', () => {
  let person: Person;
  let api: Client;

  beforeAll(async () => {
    person = await addPerson(server.url, tenant.owner.api, tenant.id, 'admin', 'openid-only');
    api = await tokenClient(person, 'openid');
  });

  it('reads its user, organizations and session over REST', async () => {
    const me = await api.get('/api/v1/users/me');
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(person.id);
    const orgs = await api.get('/api/v1/orgs');
    expect(orgs.status).toBe(200);
    expect(orgs.body.map((o: { id: string }) => o.id)).toEqual([tenant.id]);
    const session = await api.get('/api/v1/auth/session');
    expect(session.status).toBe(200);
    expect(session.body.user.id).toBe(person.id);
  });

  it('cannot act as its user, even an admin, over REST: 403 insufficient_scope with the RFC 6750 challenge', async () => {
    expectInsufficientScope(await api.post('/api/v1/api-keys', { name: 'escalation', role: 'admin' }));
    expectInsufficientScope(
      await api.post('/api/v1/oauth-clients', { name: 'Rogue', redirect_uris: [REDIRECT], allowed_scopes: ['openid'] }),
    );
    expectInsufficientScope(
      await api.post(`/v1/organizations/${tenant.id}/invitations`, { email: 'rogue@example.test', role: 'admin' }),
    );
    expectInsufficientScope(await api.get('/api/v1/api-keys'));
    expectInsufficientScope(await api.get(`/v1/organizations/${tenant.id}/members`));
    expectInsufficientScope(await api.delete(`/v1/users/${person.id}`));

    // Nothing happened: the user is still there, with no key made for it.
    expect((await tenant.owner.api.get(`/v1/users/${person.id}`)).status).toBe(200);
    const keys = await tenant.owner.api.get('/api/v1/api-keys');
    expect(keys.body.api_keys).toEqual([]);
  });

  it('is refused over GraphQL with a top-level insufficient_scope error, the profile fields excepted', async () => {
    const create = await graphql(api, 'mutation { createApiKey(input: { name: "x", role: admin }) { __typename } }');
    expect(create.body.data).toBeNull();
    expect(create.body.errors[0].extensions).toMatchObject({ code: 'insufficient_scope', scope: 'api' });
    // A query field no one listed is covered by the type-level rule as well.
    const users = await graphql(api, 'query { users { items { id } } }');
    expect(users.body.errors[0].extensions.code).toBe('insufficient_scope');

    const own = await graphql(api, 'query { me { id } myOrganizations { id } viewer { user { id } } }');
    expect(own.body.errors).toBeUndefined();
    expect(own.body.data).toEqual({
      me: { id: person.id },
      myOrganizations: [{ id: tenant.id }],
      viewer: { user: { id: person.id } },
    });
  });

  it('needs openid, profile or email even for the profile', async () => {
    const orgOnly = await tokenClient(person, 'organization');
    const me = await orgOnly.get('/api/v1/users/me');
    expect(me.status).toBe(403);
    expect(me.body.error).toBe('insufficient_scope');
    expect(me.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope", scope="openid"');
  });
});

describe('an access token with the api scope', () => {
  it("acts as its user, within the user's role, but mints no credential (test/server/credential-boundaries.test.ts)", async () => {
    const admin = await addPerson(server.url, tenant.owner.api, tenant.id, 'admin', 'api-admin');
    const api = await tokenClient(admin, 'openid api');

    expect((await api.get('/api/v1/api-keys')).status).toBe(200);
    expect((await api.get('/api/v1/oauth-clients')).status).toBe(200);
    expect((await api.get(`/v1/organizations/${tenant.id}/members`)).status).toBe(200);
    expect((await api.post('/api/v1/api-keys', { name: 'via token', role: 'admin' })).status).toBe(403);
    // Deleting its own account is first-party: not even with the password (docs/architecture.md "First-party only").
    const own = await api.delete(`/v1/users/${admin.id}`, { password: PASSWORD });
    expect([own.status, own.body.reason]).toEqual([403, 'first_party_only']);
    expect((await api.get('/api/v1/users/me')).status).toBe(200);
  });

  it("is still bound by the user's role: a member's token cannot make keys", async () => {
    const member = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'api-member');
    const api = await tokenClient(member, 'openid api');

    const reply = await api.post('/api/v1/api-keys', { name: 'nope' });
    expect(reply.status).toBe(403);
    expect(reply.body.error).toBe('forbidden');
    expect((await api.get('/api/v1/users/me')).status).toBe(200);
  });
});

describe('the api scope', () => {
  it('is published in discovery and described on the consent page', async () => {
    const doc = await client(server.url).get('/.well-known/openid-configuration');
    expect(doc.body.scopes_supported).toContain('api');

    const consenting = await registerClient(tenant.admin.api, {
      name: 'Asks',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid', 'api'],
    });
    const session = await sessionOf(server.url, tenant.member);
    const page = await authorize(server.url, session, {
      client_id: consenting.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid api',
      nonce: 'n',
    });
    expect(page.pathname).toBe('/consent');
    const prompt = await client(server.url, { token: session }).post('/graphql', {
      query: 'query($r: String!) { consentPrompt(request: $r) { scopes { name description } } }',
      variables: { r: page.searchParams.get('request') },
    });
    expect(prompt.body.data.consentPrompt.scopes).toContainEqual({
      name: 'api',
      description: "Act as you in Tessera's API",
    });
    expect(codeFrom(await decideConsent(server.url, session, page))).toEqual(expect.any(String));
  });

  it('is refused to a client whose allowed_scopes do not list it', async () => {
    const session = await sessionOf(server.url, tenant.member);
    const back = await authorize(server.url, session, {
      client_id: plain.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid api',
      nonce: 'n',
    });
    expect(back.searchParams.get('error')).toBe('invalid_scope');
  });
});
