// The organizations list searched by name (GraphQL `organizations(search:)`, REST `GET /v1/organizations?search=`):
// a name containing the text in any case, among the organizations the caller may list.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let platform: Client;
let acme: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'ACME Widgets');
  await createTenant(server.url, platform, 'Northwind');
  await platform.post('/v1/organizations', { name: 'acme labs' });
  await platform.post('/v1/organizations', { name: '100% Cotton' });
  await platform.post('/v1/organizations', { name: '1000 Cotton' });
});
afterAll(() => server?.stop());

const names = async (as: Client, query: string) => {
  const reply = await as.get(`/v1/organizations?${query}`);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.organizations.map((o: { name: string }) => o.name).sort();
};

describe('GET /v1/organizations?search=', () => {
  it('lists to a platform admin every organization whose name contains the text, in any case', async () => {
    expect(await names(platform, 'search=acme')).toEqual(['ACME Widgets', 'acme labs']);
    expect(await names(platform, 'search=%20WIDGET%20')).toEqual(['ACME Widgets']);
    expect(await names(platform, 'search=nobody')).toEqual([]);
  });

  it('takes % and _ as themselves, not as wildcards', async () => {
    expect(await names(platform, `search=${encodeURIComponent('0%')}`)).toEqual(['100% Cotton']);
    expect(await names(platform, 'search=_')).toEqual([]);
  });

  it("searches only the caller's own organizations for everyone else", async () => {
    expect(await names(acme.member.api, 'search=acme')).toEqual(['ACME Widgets']);
    expect(await names(acme.member.api, 'search=north')).toEqual([]);
  });

  it('lists every organization for an empty search, and pages the matches', async () => {
    const all = await names(platform, 'limit=100');
    expect(await names(platform, 'search=&limit=100')).toEqual(all);
    const first = await platform.get('/v1/organizations?search=cotton&limit=1');
    expect(first.body.organizations).toHaveLength(1);
    const second = await platform.get(`/v1/organizations?search=cotton&limit=1&cursor=${first.body.next_cursor}`);
    expect([first.body.organizations[0].name, second.body.organizations[0].name].sort()).toEqual([
      '100% Cotton',
      '1000 Cotton',
    ]);
  });

  it('answers 400 for a search longer than 200 characters, and 401 without credentials', async () => {
    const reply = await platform.get(`/v1/organizations?search=${'a'.repeat(201)}`);
    expect(reply.status).toBe(400);
    expect(reply.body.details).toEqual([{ path: 'search', message: 'must be at most 200 characters' }]);
    expect((await client(server.url).get('/v1/organizations?search=acme')).status).toBe(401);
  });
});

describe('organizations(search:) over GraphQL', () => {
  it('filters the page the same way', async () => {
    const reply = await platform.post('/graphql', {
      query: '{ organizations(search: "LABS") { items { name } nextCursor } }',
    });
    expect(reply.body).toEqual({ data: { organizations: { items: [{ name: 'acme labs' }], nextCursor: null } } });
  });
});
