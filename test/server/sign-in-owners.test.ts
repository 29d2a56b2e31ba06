// Who controls sign-in controls the organization (docs/architecture.md#single-sign-on, #directory-provisioning): only
// owners (and platform admins, who act as owners) add, verify and delete domains, create, change and delete
// connections and their role maps, and make and revoke directory tokens; admins still read them. No mapping gives a
// role above its author's. T6 of issue 38: an admin's own IdP with role_map {"x": "owner"} made them owner.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client, type Reply } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';
import { proveDomain, ssoSignInThroughOidc } from '../helpers/sso.ts';

let server: TestServer;
let dns: TestDnsServer;
let ca: TestCa;
let idp: OidcUpstream;
let platform: Client;
let acme: Tenant;

beforeAll(async () => {
  dns = await startDnsServer();
  ca = makeTestCa(['idp.test']);
  idp = await startOidcUpstream(ca);
  server = await startTestServer({
    env: { DNS_SERVERS: dns.address, WEBHOOK_CA_FILE: ca.caFile },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme');
  await proveDomain(acme.owner.api, dns, 'acme.test');
});
afterAll(async () => {
  await server?.stop();
  await idp?.close();
  await dns?.stop();
  ca?.remove();
});

const oidcConnection = (extra: Record<string, unknown> = {}) => ({
  type: 'oidc',
  name: 'Acme IdP',
  issuer: idp.issuer,
  client_id: idp.clientId,
  client_secret: idp.clientSecret,
  scopes: ['email', 'profile', 'groups'],
  ...extra,
});

function expectForbidden(reply: Reply, what: string) {
  expect(reply.status, `${what}: ${JSON.stringify(reply.body)}`).toBe(403);
  expect(reply.body.error, what).toBe('forbidden');
}

const gql = (api: Client, query: string, variables: Record<string, unknown> = {}) =>
  api.post('/graphql', { query, variables });
const roleIn = async (token: string | null) =>
  (await client(server.url, { token: token ?? undefined }).get('/api/v1/auth/session')).body.organization?.role;

describe('domains', () => {
  it('an admin reads them but cannot add, verify or delete one, over REST or GraphQL; an owner can', async () => {
    const added = await acme.owner.api.post('/api/v1/domains', { domain: 'eu.acme.test' });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    dns.txt.set(added.body.verification.name, [added.body.verification.value]);
    const before = await server.base.db.domain.count({ where: { organizationId: acme.id } });

    expectForbidden(await acme.admin.api.post('/api/v1/domains', { domain: 'us.acme.test' }), 'add');
    expectForbidden(await acme.admin.api.post(`/api/v1/domains/${added.body.id}/verify`), 'verify');
    expectForbidden(await acme.admin.api.delete(`/api/v1/domains/${added.body.id}`), 'delete');
    const viaGraphql = await gql(acme.admin.api, 'mutation($id: ID!) { deleteDomain(id: $id) { __typename } }', {
      id: added.body.id,
    });
    expect(viaGraphql.body.errors?.[0]?.extensions?.code, JSON.stringify(viaGraphql.body)).toBe('forbidden');
    expect(await server.base.db.domain.count({ where: { organizationId: acme.id } })).toBe(before);
    expect((await server.base.db.domain.findUniqueOrThrow({ where: { id: added.body.id } })).verifiedAt).toBeNull();

    const listed = await acme.admin.api.get('/api/v1/domains');
    expect(listed.status).toBe(200);
    expect(listed.body.domains.map((d: { domain: string }) => d.domain).sort()).toEqual(['acme.test', 'eu.acme.test']);

    expect((await acme.owner.api.post(`/api/v1/domains/${added.body.id}/verify`)).body.verified).toBe(true);
    expect((await acme.owner.api.delete(`/api/v1/domains/${added.body.id}`)).status).toBe(204);
  });

  it('a platform admin acts as an owner', async () => {
    const added = await platform.post('/api/v1/domains', { domain: 'platform.acme.test', organization_id: acme.id });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect((await platform.delete(`/api/v1/domains/${added.body.id}`)).status).toBe(204);
  });
});

describe('connections', () => {
  let connectionId: string;

  beforeAll(async () => {
    const created = await acme.owner.api.post(
      '/api/v1/connections',
      oidcConnection({
        domains: ['acme.test'],
        role_claim: 'groups',
        role_map: { founders: 'owner', leads: 'admin' },
      }),
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    connectionId = created.body.id;
    idp.redirectUris.add(created.body.callback_url);
  });

  it('T6: an admin cannot create a connection whose role map makes owners, nor any other', async () => {
    const count = await server.base.db.ssoConnection.count({ where: { organizationId: acme.id } });
    expectForbidden(
      await acme.admin.api.post(
        '/api/v1/connections',
        oidcConnection({ name: 'Admin IdP', role_claim: 'groups', role_map: { x: 'owner' } }),
      ),
      'role_map owner',
    );
    expectForbidden(
      await acme.admin.api.post('/api/v1/connections', oidcConnection({ name: 'Admin IdP', default_role: 'owner' })),
      'default_role owner',
    );
    expectForbidden(await acme.admin.api.post('/api/v1/connections', oidcConnection({ name: 'Admin IdP' })), 'plain');
    const viaGraphql = await gql(
      acme.admin.api,
      'mutation($i: CreateSsoConnectionInput!) { createSsoConnection(input: $i) { __typename } }',
      {
        i: {
          type: 'oidc',
          name: 'Admin IdP',
          issuer: idp.issuer,
          clientId: idp.clientId,
          clientSecret: idp.clientSecret,
          roleClaim: 'groups',
          roleMap: { x: 'owner' },
        },
      },
    );
    expect(viaGraphql.body.errors?.[0]?.extensions?.code, JSON.stringify(viaGraphql.body)).toBe('forbidden');
    expect(await server.base.db.ssoConnection.count({ where: { organizationId: acme.id } })).toBe(count);
  });

  it("T6: an admin cannot change an existing connection's role map (or anything else of it), and signing in then gives no owner", async () => {
    expectForbidden(
      await acme.admin.api.patch(`/api/v1/connections/${connectionId}`, { role_map: { staff: 'owner' } }),
      'role_map',
    );
    expectForbidden(
      await acme.admin.api.patch(`/api/v1/connections/${connectionId}`, { role_claim: 'department' }),
      'role_claim',
    );
    expectForbidden(
      await acme.admin.api.patch(`/api/v1/connections/${connectionId}`, { default_role: 'owner' }),
      'default_role',
    );
    expectForbidden(await acme.admin.api.patch(`/api/v1/connections/${connectionId}`, { enabled: false }), 'enabled');
    expectForbidden(await acme.admin.api.delete(`/api/v1/connections/${connectionId}`), 'delete');
    const viaGraphql = await gql(
      acme.admin.api,
      'mutation($id: String!, $i: UpdateSsoConnectionInput!) { updateSsoConnection(id: $id, input: $i) { __typename } }',
      { id: connectionId, i: { roleMap: { staff: 'owner' } } },
    );
    expect(viaGraphql.body.errors?.[0]?.extensions?.code, JSON.stringify(viaGraphql.body)).toBe('forbidden');

    const read = await acme.admin.api.get(`/api/v1/connections/${connectionId}`);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({
      enabled: true,
      role_claim: 'groups',
      default_role: 'member',
      role_map: { founders: 'owner', leads: 'admin' },
    });
    expect((await acme.admin.api.get('/api/v1/connections')).body.connections.map((c: { id: string }) => c.id)).toEqual(
      [connectionId],
    );

    // The group the admin tried to make owners signs in as what the owner's map says: the default role.
    idp.addAccount({
      sub: 'staffer',
      email: 'staffer@acme.test',
      email_verified: true,
      name: 'Staffer',
      groups: ['staff'],
    });
    idp.signInAs('staffer');
    expect(await roleIn((await ssoSignInThroughOidc(server.url, connectionId, ca)).session)).toBe('member');
  });

  it("an owner's role map that makes owners still does", async () => {
    idp.addAccount({
      sub: 'founder',
      email: 'founder@acme.test',
      email_verified: true,
      name: 'Founder',
      groups: ['founders'],
    });
    idp.signInAs('founder');
    expect(await roleIn((await ssoSignInThroughOidc(server.url, connectionId, ca)).session)).toBe('owner');
    const changed = await acme.owner.api.patch(`/api/v1/connections/${connectionId}`, {
      role_map: { founders: 'owner', leads: 'admin', staff: 'admin' },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    idp.signInAs('staffer');
    expect(await roleIn((await ssoSignInThroughOidc(server.url, connectionId, ca)).session)).toBe('admin');
  });
});

describe('directory tokens and group mappings', () => {
  it('an admin reads directory tokens but cannot make or revoke one; an owner can', async () => {
    const made = await acme.owner.api.post('/api/v1/scim-tokens', { name: 'Entra ID' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expectForbidden(await acme.admin.api.post('/api/v1/scim-tokens', { name: 'Shadow directory' }), 'create');
    expectForbidden(await acme.admin.api.delete(`/api/v1/scim-tokens/${made.body.id}`), 'revoke');
    const viaGraphql = await gql(acme.admin.api, 'mutation { createScimToken(name: "Shadow") { __typename } }');
    expect(viaGraphql.body.errors?.[0]?.extensions?.code, JSON.stringify(viaGraphql.body)).toBe('forbidden');
    const listed = await acme.admin.api.get('/api/v1/scim-tokens');
    expect(listed.status).toBe(200);
    expect(listed.body.scim_tokens).toEqual([
      expect.objectContaining({ id: made.body.id, name: 'Entra ID', revoked_at: null }),
    ]);
    expect((await client(server.url, { token: made.body.token }).get('/scim/v2/Users')).status).toBe(200);
    expect((await acme.owner.api.delete(`/api/v1/scim-tokens/${made.body.id}`)).status).toBe(204);
  });

  it("an admin's group mapping to owner is refused and the group's members stay members; an owner's makes owners", async () => {
    const token = (await acme.owner.api.post('/api/v1/scim-tokens', { name: 'Okta' })).body.token as string;
    const scim = client(server.url, { token });
    const user = await scim.post('/scim/v2/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'grouped@acme.test',
      name: { givenName: 'G', familyName: 'M' },
      emails: [{ value: 'grouped@acme.test', primary: true }],
      active: true,
    });
    expect(user.status, JSON.stringify(user.body)).toBe(201);
    const group = await scim.post('/scim/v2/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
      displayName: 'Board',
      members: [{ value: user.body.id }],
    });
    expect(group.status, JSON.stringify(group.body)).toBe(201);
    const userId = (await server.base.db.scimUser.findUniqueOrThrow({ where: { id: user.body.id } })).userId;
    const roleOf = async () =>
      (
        await server.base.db.membership.findUniqueOrThrow({
          where: { userId_organizationId: { userId, organizationId: acme.id } },
        })
      ).role;

    expectForbidden(
      await acme.admin.api.post('/api/v1/directory/group-mappings', { group: 'Board', role: 'owner' }),
      'admin maps owner',
    );
    expect(
      await server.base.db.directoryGroupMapping.count({ where: { organizationId: acme.id, groupName: 'Board' } }),
    ).toBe(0);
    expect(await roleOf()).toBe('member');
    // Up to their own role an admin still maps groups.
    const asAdmin = await acme.admin.api.post('/api/v1/directory/group-mappings', { group: 'Helpers', role: 'admin' });
    expect(asAdmin.status, JSON.stringify(asAdmin.body)).toBe(201);

    const asOwner = await acme.owner.api.post('/api/v1/directory/group-mappings', { group: 'Board', role: 'owner' });
    expect(asOwner.status, JSON.stringify(asOwner.body)).toBe(201);
    expect(await roleOf()).toBe('owner');
    // Nor does an admin remove the owner's mapping, which would take the role from the group's owners at the next change.
    expectForbidden(
      await acme.admin.api.delete(`/api/v1/directory/group-mappings/${asOwner.body.id}`),
      'admin removes owner mapping',
    );
    expect(await server.base.db.directoryGroupMapping.count({ where: { id: asOwner.body.id } })).toBe(1);
    expect((await acme.admin.api.delete(`/api/v1/directory/group-mappings/${asAdmin.body.id}`)).status).toBe(204);
  });
});
