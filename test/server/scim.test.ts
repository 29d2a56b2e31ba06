// The SCIM 2.0 service provider at /scim/v2 over real HTTP (RFC 7643, 7644; docs/architecture.md#directory-provisioning):
// a directory's token made over REST sees its own organization only; Users and Groups on their success and failure
// paths as Entra ID and Okta send them, in SCIM's shapes; discovery; paging and filters; hostile requests answered
// 4xx in the SCIM error schema, never 500; each request in the directory's log; the token's own rate limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { randomBytes } from 'node:crypto';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client, type Reply } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

let server: TestServer;
let platform: Client;
let acme: Tenant;
let other: Tenant;
let acmeToken: { id: string; token: string };
let otherToken: { id: string; token: string };
/** Everything the service logged at error level: a 500 anywhere fails the file. */
const errorLogs: unknown[] = [];

beforeAll(async () => {
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => void (JSON.parse(line).level >= 50 && errorLogs.push(JSON.parse(line))) },
  );
  server = await startTestServer({ logger });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme');
  other = await createTenant(server.url, platform, 'Other');
  acmeToken = (await acme.owner.api.post('/api/v1/scim-tokens', { name: 'Entra ID' })).body;
  otherToken = (await other.owner.api.post('/api/v1/scim-tokens', { name: 'Okta' })).body;
  expect(acmeToken.token).toMatch(/^tsd_/);
});
afterAll(async () => {
  await server?.stop();
  expect(errorLogs).toEqual([]);
});

/** A directory's client: its token, SCIM's media type. */
const scim = (token: string) => {
  const api = client(server.url, { token });
  const h = { 'content-type': 'application/scim+json', accept: 'application/scim+json' };
  return {
    get: (path: string) => api.get(`/scim/v2${path}`, h),
    post: (path: string, body: unknown) => api.post(`/scim/v2${path}`, body, h),
    put: (path: string, body: unknown) => api.request('PUT', `/scim/v2${path}`, body, h),
    patch: (path: string, body: unknown) => api.patch(`/scim/v2${path}`, body, h),
    delete: (path: string) => api.delete(`/scim/v2${path}`, undefined, h),
  };
};
const directory = () => scim(acmeToken.token);

/** Bytes as they are, for bodies no JSON client would send. */
async function raw(
  method: string,
  path: string,
  body: string | Uint8Array | undefined,
  headers: Record<string, string> = {},
  token = acmeToken.token,
): Promise<Reply> {
  const res = await fetch(`${server.url}/scim/v2${path}`, {
    method,
    body: body as BodyInit | undefined,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json', ...headers },
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

function expectScimError(reply: Reply, status: number, scimType?: string) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.headers.get('content-type')).toBe('application/scim+json; charset=utf-8');
  expect(reply.body).toMatchObject({ schemas: [ERROR], status: String(status) });
  if (scimType) expect(reply.body.scimType).toBe(scimType);
  else expect(reply.body.scimType).toBeUndefined();
  return reply.body as { detail?: string };
}

function expectOk(reply: Reply, status = 200) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  if (status !== 204) expect(reply.headers.get('content-type')).toBe('application/scim+json; charset=utf-8');
  return reply.body;
}

const unique = () => randomBytes(4).toString('hex');

/** A User as Entra ID provisions one (its published request). */
function entraUser(tag = unique()) {
  return {
    schemas: [USER, ENTERPRISE],
    externalId: `entra-${tag}`,
    userName: `Test_User_${tag}@acme.test`,
    active: true,
    emails: [{ primary: true, type: 'work', value: `Test_User_${tag}@acme.test` }],
    meta: { resourceType: 'User' },
    name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
    roles: [],
    [ENTERPRISE]: { department: 'Sales', manager: { value: 'boss' } },
  };
}

async function createUser(body: object = entraUser()) {
  return expectOk(await directory().post('/Users', body), 201) as {
    id: string;
    userName: string;
    meta: { location: string; version: string };
  };
}

async function acmeMembers(): Promise<{ user: { email: string } }[]> {
  return (await acme.owner.api.get(`/v1/organizations/${acme.id}/members?limit=100`)).body.members;
}

describe('authentication', () => {
  it('refuses a request without a token with 401 and a Bearer challenge, in the SCIM error schema', async () => {
    const reply = await raw('GET', '/Users', undefined, { authorization: '' });
    expectScimError(reply, 401);
    expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer/);
    for (const path of ['/ServiceProviderConfig', '/Groups', '/nowhere'])
      expectScimError(await raw('GET', path, undefined, { authorization: '' }), 401);
  });

  it('refuses unknown, malformed, revoked and other kinds of tokens alike', async () => {
    const key = await acme.owner.api.post('/api/v1/api-keys', { name: 'not a directory' });
    const revoked = (await acme.owner.api.post('/api/v1/scim-tokens', { name: 'old' })).body;
    expectOk(await scim(revoked.token).get('/Users'));
    expect((await acme.owner.api.delete(`/api/v1/scim-tokens/${revoked.id}`)).status).toBe(204);
    for (const authorization of [
      `Bearer tsd_${'x'.repeat(43)}`,
      'Bearer ',
      'Basic dXNlcjpwYXNz',
      `Bearer ${acmeToken.token}x`,
      `Bearer ${acmeToken.token.slice(0, -1)}`,
      `Bearer ${revoked.token}`,
      `Bearer ${acme.owner.token}`,
      `Bearer ${key.body.key}`,
      `Bearer tsd_${'a'.repeat(5000)}`,
      'Bearer a b',
    ]) {
      const reply = await raw('GET', '/Users', undefined, { authorization });
      expectScimError(reply, 401);
      expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer realm="tessera"/);
    }
    // An API key with its secret is still no directory token.
    expectScimError(
      await raw('GET', '/Users', undefined, {
        authorization: `Bearer ${key.body.key}`,
        'x-api-secret': key.body.secret,
      }),
      401,
    );
  });

  it('takes the scheme in any case', async () => {
    expectOk(await raw('GET', '/Users', undefined, { authorization: `bearer ${acmeToken.token}` }));
  });
});

describe('discovery', () => {
  it('says honestly what is supported', async () => {
    const config = expectOk(await directory().get('/ServiceProviderConfig'));
    expect(config).toMatchObject({
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
      patch: { supported: true },
      bulk: { supported: false },
      filter: { supported: true, maxResults: 1000 },
      changePassword: { supported: false },
      sort: { supported: false },
      etag: { supported: false },
      authenticationSchemes: [expect.objectContaining({ type: 'oauthbearertoken', primary: true })],
      meta: { resourceType: 'ServiceProviderConfig', location: `${server.url}/scim/v2/ServiceProviderConfig` },
    });
  });

  it('lists the resource types and schemas, each also by id', async () => {
    const types = expectOk(await directory().get('/ResourceTypes'));
    expect(types).toMatchObject({ schemas: [LIST], totalResults: 2, itemsPerPage: 2, startIndex: 1 });
    expect(
      types.Resources.map((t: { id: string; endpoint: string; schema: string }) => [t.id, t.endpoint, t.schema]),
    ).toEqual([
      ['User', '/Users', USER],
      ['Group', '/Groups', GROUP],
    ]);
    expect(expectOk(await directory().get('/ResourceTypes/Group'))).toMatchObject({
      id: 'Group',
      meta: { location: `${server.url}/scim/v2/ResourceTypes/Group` },
    });
    expectScimError(await directory().get('/ResourceTypes/Device'), 404);

    const schemas = expectOk(await directory().get('/Schemas'));
    expect(schemas.Resources.map((s: { id: string }) => s.id)).toEqual([USER, GROUP]);
    const user = expectOk(await directory().get(`/Schemas/${USER}`));
    expect(user.attributes.map((a: { name: string }) => a.name)).toEqual([
      'userName',
      'name',
      'displayName',
      'active',
      'emails',
      'groups',
    ]);
    expect(user.attributes[0]).toMatchObject({
      name: 'userName',
      type: 'string',
      required: true,
      caseExact: false,
      uniqueness: 'server',
      mutability: 'readWrite',
    });
    expect(user.attributes.find((a: { name: string }) => a.name === 'groups')).toMatchObject({
      mutability: 'readOnly',
      multiValued: true,
    });
    expect(
      expectOk(await directory().get(`/Schemas/${GROUP}`)).attributes.map((a: { name: string }) => a.name),
    ).toEqual(['displayName', 'members']);
    expectScimError(await directory().get('/Schemas/urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'), 404);
  });

  it('answers 403 to a filter on the discovery endpoints (RFC 7644 4)', async () => {
    for (const path of ['/ServiceProviderConfig', '/ResourceTypes', '/Schemas'])
      expectScimError(await directory().get(`${path}?filter=id%20eq%20%22User%22`), 403);
  });
});

describe('users', () => {
  it("follow Entra ID's sequence: look up, create, read, change, deactivate, reactivate, delete", async () => {
    const tag = unique();
    const body = entraUser(tag);
    // Entra first checks the user is not there.
    const none = expectOk(
      await directory().get(`/Users?filter=${encodeURIComponent(`userName eq "${body.userName}"`)}`),
    );
    expect(none).toEqual({ schemas: [LIST], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });

    const created = await directory().post('/Users', body);
    const user = expectOk(created, 201);
    expect(created.headers.get('location')).toBe(`${server.url}/scim/v2/Users/${user.id}`);
    expect(user).toEqual({
      schemas: [USER],
      id: user.id,
      externalId: `entra-${tag}`,
      userName: body.userName,
      name: { givenName: 'givenName', familyName: 'familyName', formatted: 'givenName familyName' },
      active: true,
      emails: [{ value: body.userName.toLowerCase(), type: 'work', primary: true }],
      groups: [],
      meta: {
        resourceType: 'User',
        created: expect.any(String),
        lastModified: expect.any(String),
        location: created.headers.get('location'),
        version: 'W/"1"',
      },
    });
    expect((await acmeMembers()).map((m) => m.user.email)).toContain(body.userName.toLowerCase());

    expect(expectOk(await directory().get(`/Users/${user.id}`))).toEqual(user);
    // userName is compared case-insensitively, and so are attribute names
    const found = expectOk(
      await directory().get(`/Users?filter=${encodeURIComponent(`USERNAME eq "${body.userName.toUpperCase()}"`)}`),
    );
    expect(found.Resources.map((u: { id: string }) => u.id)).toEqual([user.id]);
    const byEmail = expectOk(
      await directory().get(
        `/Users?filter=${encodeURIComponent(`emails[type eq "work"].value eq "${body.userName}"`)}`,
      ),
    );
    expect(byEmail.totalResults).toBe(1);

    const changed = expectOk(
      await directory().patch(`/Users/${user.id}`, {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'Replace', path: 'displayName', value: 'Ann Changed' },
          { op: 'Replace', path: 'name.givenName', value: 'Ann' },
          { op: 'Add', path: 'title', value: 'Director' },
          { op: 'Replace', path: `${ENTERPRISE}:department`, value: 'Marketing' },
        ],
      }),
    );
    expect(changed).toMatchObject({
      id: user.id,
      displayName: 'Ann Changed',
      name: { givenName: 'Ann', familyName: 'familyName' },
      meta: { version: 'W/"2"' },
    });

    // Attributes Tessera does not keep change nothing, and write nothing.
    const same = expectOk(
      await directory().patch(`/Users/${user.id}`, {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'Replace', path: 'title', value: 'CFO' },
          { op: 'Add', path: 'phoneNumbers[type eq "work"].value', value: '+1 555' },
        ],
      }),
    );
    expect(same).toEqual(changed);

    const deactivated = expectOk(
      await directory().patch(`/Users/${user.id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'Replace', path: 'active', value: 'False' }],
      }),
    );
    expect(deactivated.active).toBe(false);
    expect((await acmeMembers()).map((m) => m.user.email)).not.toContain(body.userName.toLowerCase());
    // Still there for the directory, to come back.
    expect(
      expectOk(await directory().get(`/Users?filter=${encodeURIComponent('active eq false')}`)).Resources.map(
        (u: { id: string }) => u.id,
      ),
    ).toContain(user.id);

    expect(
      expectOk(
        await directory().patch(`/Users/${user.id}`, {
          schemas: [PATCH_OP],
          Operations: [{ op: 'Replace', path: 'active', value: 'True' }],
        }),
      ).active,
    ).toBe(true);
    expect((await acmeMembers()).map((m) => m.user.email)).toContain(body.userName.toLowerCase());

    expectOk(await directory().delete(`/Users/${user.id}`), 204);
    expectScimError(await directory().get(`/Users/${user.id}`), 404);
    expectScimError(await directory().delete(`/Users/${user.id}`), 404);
    expect((await acmeMembers()).map((m) => m.user.email)).not.toContain(body.userName.toLowerCase());
  });

  it("follow Okta's: look up with paging, create, replace whole, deactivate with a value and no path", async () => {
    const tag = unique();
    const userName = `okta.${tag}@acme.test`;
    expect(
      expectOk(
        await directory().get(
          `/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`,
        ),
      ).totalResults,
    ).toBe(0);
    const user = await createUser({
      schemas: [USER],
      userName,
      name: { givenName: 'Okta', familyName: 'User' },
      emails: [{ primary: true, value: userName, type: 'work' }],
      displayName: 'Okta User',
      locale: 'en-US',
      externalId: `00u${tag}`,
      groups: [],
      password: 'ignored-1!',
      active: true,
    });
    const replaced = expectOk(
      await directory().put(`/Users/${user.id}`, {
        schemas: [USER],
        id: user.id,
        userName,
        name: { givenName: 'Okta', familyName: 'Renamed' },
        emails: [{ primary: true, value: userName, type: 'work' }],
        displayName: 'Okta Renamed',
        externalId: `00u${tag}`,
        active: true,
      }),
    );
    expect(replaced).toMatchObject({ name: { familyName: 'Renamed' }, displayName: 'Okta Renamed' });
    const off = expectOk(
      await directory().patch(`/Users/${user.id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', value: { active: false } }],
      }),
    );
    expect(off.active).toBe(false);
  });

  it('refuse a second user with the same userName (any case) or externalId: 409 uniqueness', async () => {
    const body = entraUser();
    await createUser(body);
    expectScimError(
      await directory().post('/Users', { ...body, externalId: 'another', userName: body.userName.toUpperCase() }),
      409,
      'uniqueness',
    );
    expectScimError(
      await directory().post('/Users', { ...entraUser(), externalId: body.externalId }),
      409,
      'uniqueness',
    );
  });

  it('refuse input they cannot take, with invalidValue', async () => {
    for (const body of [
      {},
      { userName: '' },
      { userName: 5 },
      { userName: ['a'] },
      { userName: 'x@acme.test', active: 'yes' },
      { userName: 'x@acme.test', emails: 'x@acme.test' },
      { userName: 'x@acme.test', emails: [{ value: 'not an address' }] },
      { userName: 'x'.repeat(300) },
      { userName: 'x@acme.test', name: 'X' },
      [],
      JSON.stringify('userName'),
      5,
    ]) {
      expectScimError(await directory().post('/Users', body), 400, 'invalidValue');
    }
  });

  it('apply three concurrent PATCHes of one user, each on the version it read', async () => {
    const user = await createUser();
    const replies = await Promise.all([
      directory().patch(`/Users/${user.id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'displayName', value: 'A' }],
      }),
      directory().patch(`/Users/${user.id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'name.givenName', value: 'B' }],
      }),
      directory().patch(`/Users/${user.id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'name.familyName', value: 'C' }],
      }),
    ]);
    for (const reply of replies) expectOk(reply);
    expect(expectOk(await directory().get(`/Users/${user.id}`))).toMatchObject({
      displayName: 'A',
      name: { givenName: 'B', familyName: 'C' },
      meta: { version: 'W/"4"' },
    });
  });

  it('refuse PATCHes they cannot apply with the RFC 7644 3.12 type', async () => {
    const user = await createUser();
    const patch = (...Operations: unknown[]) =>
      directory().patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations });
    expectScimError(await patch({ op: 'replace', path: 'members', value: [{ value: user.id }] }), 400, 'invalidPath');
    expectScimError(await patch({ op: 'replace', path: `${GROUP}:displayName`, value: 'x' }), 400, 'invalidPath');
    expectScimError(await patch({ op: 'replace', path: 'name.nickName', value: 'x' }), 400, 'invalidPath');
    expectScimError(await patch({ op: 'replace', path: 'favouriteColour', value: 'x' }), 400, 'invalidPath');
    expectScimError(await patch({ op: 'replace', path: '__proto__.polluted', value: 'x' }), 400, 'invalidPath');
    expectScimError(await patch({ op: 'add', path: 'groups', value: [{ value: 'g' }] }), 400, 'mutability');
    expectScimError(await patch({ op: 'remove' }), 400, 'noTarget');
    expectScimError(
      await patch({ op: 'replace', path: 'emails[type eq "home" and primary eq true].value', value: 'x@acme.test' }),
      400,
      'noTarget',
    );
    expectScimError(await patch({ op: 'replace', path: 'emails[type eq].value', value: 'x' }), 400, 'invalidFilter');
    expectScimError(await patch({ op: 'replace', path: 'active', value: 'maybe' }), 400, 'invalidValue');
    expectScimError(await patch({ op: 'remove', path: 'userName' }), 400, 'invalidValue');
    expectScimError(await patch({ op: 'move', path: 'userName', value: 'x' }), 400, 'invalidSyntax');
    expectScimError(
      await patch(...Array(1001).fill({ op: 'replace', path: 'displayName', value: 'x' })),
      400,
      'invalidSyntax',
    );
    expectScimError(
      await directory().patch(`/Users/${user.id}`, {
        Operations: [{ op: 'replace', path: 'displayName', value: 'x' }],
      }),
      400,
      'invalidSyntax',
    );
    expectScimError(
      await directory().patch(`/Users/${user.id}`, { schemas: [PATCH_OP], Operations: [] }),
      400,
      'invalidSyntax',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // none of it changed the user
    expect(expectOk(await directory().get(`/Users/${user.id}`)).meta.version).toBe('W/"1"');
  });

  it('answer 404 for unknown ids, and for ids no resource can have', async () => {
    expectScimError(await directory().get('/Users/0191d1a4-0000-7000-8000-000000000000'), 404);
    expectScimError(
      await directory().patch('/Users/nope', {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'displayName', value: 'x' }],
      }),
      404,
    );
    expectScimError(await directory().put('/Users/nope', entraUser()), 404);
    expectScimError(await directory().delete('/Users/nope'), 404);
    for (const id of ['%00', 'a%00b', 'x'.repeat(101), '%E2%80%AE', '%FF', '..%2F..%2Fetc'])
      expectScimError(await directory().get(`/Users/${id}`), 404);
  });
});

describe('lists', () => {
  let ids: string[];
  let tag: string;

  beforeAll(async () => {
    tag = unique();
    ids = [];
    for (let i = 0; i < 7; i++) {
      ids.push(
        (
          await createUser({
            schemas: [USER],
            userName: `page${i}_${tag}@acme.test`,
            displayName: i % 2 ? `Odd ${i}` : `Even ${i}`,
            externalId: `p${i}-${tag}`,
          })
        ).id,
      );
    }
  });
  const filtered = (filter: string, query = '') =>
    directory().get(`/Users?filter=${encodeURIComponent(filter)}${query}`);
  const idsOf = (reply: Reply) => expectOk(reply).Resources.map((u: { id: string }) => u.id);

  it('page from 1 with startIndex and count, in a stable order', async () => {
    const mine = `userName sw "page" and userName ew "_${tag}@acme.test"`;
    const first = expectOk(await filtered(mine, '&startIndex=1&count=3'));
    expect(first).toMatchObject({ totalResults: 7, startIndex: 1, itemsPerPage: 3 });
    expect(first.Resources.map((u: { id: string }) => u.id)).toEqual(ids.slice(0, 3));
    expect(idsOf(await filtered(mine, '&startIndex=4&count=3'))).toEqual(ids.slice(3, 6));
    expect(idsOf(await filtered(mine, '&startIndex=7&count=3'))).toEqual(ids.slice(6));
    expect(expectOk(await filtered(mine, '&startIndex=8'))).toMatchObject({
      totalResults: 7,
      itemsPerPage: 0,
      Resources: [],
    });
    // RFC 7644 3.4.2.4: below 1 is 1, a negative count is 0; above the maximum is the maximum
    expect(expectOk(await filtered(mine, '&startIndex=0&count=2'))).toMatchObject({ startIndex: 1, itemsPerPage: 2 });
    expect(expectOk(await filtered(mine, '&startIndex=-5&count=-1'))).toMatchObject({
      startIndex: 1,
      totalResults: 7,
      itemsPerPage: 0,
      Resources: [],
    });
    expect(expectOk(await filtered(mine, '&count=1000000'))).toMatchObject({ itemsPerPage: 7 });
    expect(expectOk(await filtered(mine, '&startIndex=99999999999999'))).toMatchObject({
      itemsPerPage: 0,
      totalResults: 7,
    });
    for (const query of ['count=abc', 'startIndex=1.5', 'count=1e3', 'startIndex=', 'count=1&count=2']) {
      expectScimError(await directory().get(`/Users?${query}`), 400, 'invalidValue');
    }
  });

  it('filter with each operator, wildcards taken literally', async () => {
    expect(idsOf(await filtered(`externalId eq "p3-${tag}"`))).toEqual([ids[3]]);
    expect(idsOf(await filtered(`externalId ne "p3-${tag}" and userName ew "_${tag}@acme.test"`))).toEqual(
      ids.filter((_, i) => i !== 3),
    );
    expect(idsOf(await filtered(`displayName co "odd" and userName co "${tag}"`))).toEqual([ids[1], ids[3], ids[5]]);
    expect(idsOf(await filtered(`displayName sw "EVEN 6" and userName co "${tag}"`))).toEqual([ids[6]]);
    expect(
      idsOf(await filtered(`userName co "${tag}" and not (displayName co "odd" or displayName co "even 0")`)),
    ).toEqual([ids[2], ids[4], ids[6]]);
    expect(
      idsOf(
        await filtered(
          `userName co "${tag}" and meta.created gt "2000-01-01T00:00:00Z" and meta.lastModified lt "2999-01-01T00:00:00Z"`,
        ),
      ),
    ).toEqual(ids);
    expect(idsOf(await filtered(`userName co "${tag}" and externalId pr and name pr`))).toEqual([]);
    expect(idsOf(await filtered(`id eq "${ids[2]}"`))).toEqual([ids[2]]);
    // _ and % are no wildcards: page0_<tag> is not matched by page0%<tag> nor by page_0
    expect(idsOf(await filtered(`userName eq "page0%${tag}@acme.test"`))).toEqual([]);
    expect(idsOf(await filtered(`userName eq "page0x${tag}@acme.test"`))).toEqual([]);
    expect(idsOf(await filtered(`userName sw "page_" and userName co "${tag}"`))).toEqual([]);
    expect(idsOf(await filtered(`userName co "%" or userName co "_${tag}X"`))).toEqual([]);
  });

  it('refuse filters they cannot run with invalidFilter', async () => {
    for (const filter of [
      'userName eq',
      'foo eq "a"',
      'active gt true',
      'userName eq "a\u0000"',
      'userName eq "unclosed',
      `${'('.repeat(30)}userName eq "a"${')'.repeat(30)}`,
      `userName eq "${'a'.repeat(2100)}"`,
      'members[value eq "a"]',
      'meta.created gt "yesterday"',
      `userName eq "a"${'\n'.repeat(40)}`,
    ]) {
      const detail = expectScimError(await filtered(filter), 400, 'invalidFilter').detail!;
      expect(detail.length).toBeLessThan(300);
    }
    expectScimError(await directory().get('/Users?filter=a&filter=b'), 400, 'invalidFilter');
  });

  it('take attributes and excludedAttributes', async () => {
    const only = expectOk(await filtered(`id eq "${ids[0]}"`, '&attributes=userName,name.givenName,emails.value'));
    expect(only.Resources[0]).toEqual({
      schemas: [USER],
      id: ids[0],
      userName: `page0_${tag}@acme.test`,
      emails: [{ value: `page0_${tag}@acme.test` }],
    });
    const without = expectOk(
      await filtered(`id eq "${ids[0]}"`, `&excludedAttributes=emails,groups,meta,${USER}:displayName`),
    ).Resources[0];
    expect(Object.keys(without).sort()).toEqual(['active', 'externalId', 'id', 'schemas', 'userName']);
    expect(Object.keys(expectOk(await directory().get(`/Users/${ids[0]}?attributes=active`))).sort()).toEqual([
      'active',
      'id',
      'schemas',
    ]);
  });

  it('search with POST .search', async () => {
    const found = expectOk(
      await directory().post('/Users/.search', {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
        filter: `userName co "${tag}"`,
        startIndex: 2,
        count: 2,
        attributes: ['userName'],
      }),
    );
    expect(found).toMatchObject({ totalResults: 7, startIndex: 2, itemsPerPage: 2 });
    expect(found.Resources.map((u: { id: string }) => u.id)).toEqual(ids.slice(1, 3));
    expectScimError(await directory().post('/Users/.search', { filter: 'nope eq 1' }), 400, 'invalidFilter');
    expectScimError(await directory().post('/Users/.search', [1]), 400, 'invalidSyntax');
  });
});

describe('groups', () => {
  it("follow Entra ID's sequence: look up, create, check and change members, rename, delete", async () => {
    const [ann, bob, cat] = [await createUser(), await createUser(), await createUser()];
    const name = `Sales ${unique()}`;
    const none = expectOk(
      await directory().get(
        `/Groups?excludedAttributes=members&filter=${encodeURIComponent(`displayName eq "${name}"`)}`,
      ),
    );
    expect(none.totalResults).toBe(0);

    const created = await directory().post('/Groups', {
      schemas: [GROUP],
      externalId: `g-${name}`,
      displayName: name,
      members: [],
    });
    const group = expectOk(created, 201);
    expect(created.headers.get('location')).toBe(`${server.url}/scim/v2/Groups/${group.id}`);
    expect(group).toEqual({
      schemas: [GROUP],
      id: group.id,
      externalId: `g-${name}`,
      displayName: name,
      members: [],
      meta: {
        resourceType: 'Group',
        created: expect.any(String),
        lastModified: expect.any(String),
        location: created.headers.get('location'),
        version: 'W/"1"',
      },
    });

    const patch = (...Operations: unknown[]) =>
      directory().patch(`/Groups/${group.id}`, { schemas: [PATCH_OP], Operations });
    expectOk(await patch({ op: 'Add', path: 'members', value: [{ value: ann.id }] }), 204);
    expectOk(await patch({ op: 'Add', path: 'members', value: [{ value: bob.id }, { value: cat.id }] }), 204);
    const member = (userId: string) =>
      directory().get(
        `/Groups?excludedAttributes=members&filter=${encodeURIComponent(`id eq "${group.id}" and members[value eq "${userId}"]`)}`,
      );
    expect(expectOk(await member(bob.id))).toMatchObject({ totalResults: 1, Resources: [{ id: group.id }] });
    expect(expectOk(await member(bob.id)).Resources[0].members).toBeUndefined();

    expectOk(await patch({ op: 'Remove', path: 'members', value: [{ value: bob.id }] }), 204);
    expect(expectOk(await member(bob.id)).totalResults).toBe(0);
    expectOk(await patch({ op: 'Replace', path: 'displayName', value: `${name} EMEA` }), 204);

    const read = expectOk(await directory().get(`/Groups/${group.id}`));
    expect(read.displayName).toBe(`${name} EMEA`);
    expect(read.members.map((m: { value: string }) => m.value).sort()).toEqual([ann.id, cat.id].sort());
    expect(read.members.find((m: { value: string }) => m.value === ann.id)).toEqual({
      value: ann.id,
      display: ann.userName,
      $ref: `${server.url}/scim/v2/Users/${ann.id}`,
      type: 'User',
    });
    expect(
      Object.keys(expectOk(await directory().get(`/Groups/${group.id}?excludedAttributes=members`))),
    ).not.toContain('members');
    // and the user shows the group
    expect(expectOk(await directory().get(`/Users/${ann.id}`)).groups).toEqual([
      { value: group.id, display: `${name} EMEA`, $ref: `${server.url}/scim/v2/Groups/${group.id}` },
    ]);

    expectOk(await directory().delete(`/Groups/${group.id}`), 204);
    expectScimError(await directory().get(`/Groups/${group.id}`), 404);
  });

  it("follow Okta's: create with members, rename with the id echoed, remove by a filter path, replace the list", async () => {
    const [ann, bob] = [await createUser(), await createUser()];
    const name = `Okta ${unique()}`;
    const group = expectOk(
      await directory().post('/Groups', {
        schemas: [GROUP],
        displayName: name,
        members: [{ value: ann.id, display: 'Ann' }],
      }),
      201,
    );
    expect(group.members.map((m: { value: string }) => m.value)).toEqual([ann.id]);
    const patch = (...Operations: unknown[]) =>
      directory().patch(`/Groups/${group.id}`, { schemas: [PATCH_OP], Operations });
    expectOk(await patch({ op: 'replace', value: { id: group.id, displayName: `${name} 2` } }), 204);
    expectOk(await patch({ op: 'add', path: 'members', value: [{ value: bob.id, display: 'Bob' }] }), 204);
    expectOk(await patch({ op: 'remove', path: `members[value eq "${ann.id}"]` }), 204);
    expect(expectOk(await directory().get(`/Groups/${group.id}`))).toMatchObject({
      displayName: `${name} 2`,
      members: [{ value: bob.id }],
    });
    expectOk(await patch({ op: 'replace', path: 'members', value: [{ value: ann.id }] }), 204);
    expect(
      expectOk(await directory().get(`/Groups/${group.id}`)).members.map((m: { value: string }) => m.value),
    ).toEqual([ann.id]);
    expectOk(await patch({ op: 'remove', path: 'members' }), 204);
    expect(expectOk(await directory().get(`/Groups/${group.id}`)).members).toEqual([]);
    const put = expectOk(
      await directory().put(`/Groups/${group.id}`, {
        schemas: [GROUP],
        displayName: `${name} 3`,
        members: [{ value: bob.id }],
      }),
    );
    expect(put).toMatchObject({ displayName: `${name} 3`, members: [{ value: bob.id }] });
    expect(put.externalId).toBeUndefined();
    const listed = expectOk(
      await directory().get(`/Groups?filter=${encodeURIComponent(`displayName eq "${name.toUpperCase()} 3"`)}`),
    );
    expect(listed.Resources.map((g: { id: string }) => g.id)).toEqual([group.id]);
  });

  it('refuse what they cannot take', async () => {
    const name = `Refused ${unique()}`;
    const group = expectOk(await directory().post('/Groups', { schemas: [GROUP], displayName: name }), 201);
    expectScimError(
      await directory().post('/Groups', { schemas: [GROUP], displayName: name.toLowerCase() }),
      409,
      'uniqueness',
    );
    expectScimError(
      await directory().post('/Groups', { schemas: [GROUP], displayName: `${name} x`, members: [{ value: 'nobody' }] }),
      400,
      'invalidValue',
    );
    expectScimError(await directory().post('/Groups', { schemas: [GROUP] }), 400, 'invalidValue');
    expectScimError(await directory().post('/Groups', { displayName: 5 }), 400, 'invalidValue');
    const patch = (...Operations: unknown[]) =>
      directory().patch(`/Groups/${group.id}`, { schemas: [PATCH_OP], Operations });
    expectScimError(await patch({ op: 'add', path: 'members', value: [{ value: 'nobody' }] }), 400, 'invalidValue');
    expectScimError(await patch({ op: 'add', path: 'userName', value: 'x' }), 400, 'invalidPath');
    expectScimError(await patch({ op: 'add', path: `${USER}:userName`, value: 'x' }), 400, 'invalidPath');
    expectScimError(await patch({ op: 'remove', path: 'displayName' }), 400, 'mutability');
    expectScimError(await patch({ op: 'remove', path: 'members[display eq "Ann"]' }), 400, 'invalidFilter');
    expectScimError(await directory().get('/Groups?filter=userName%20eq%20%22a%22'), 400, 'invalidFilter');
    expectScimError(await directory().get('/Groups/nope'), 404);
  });
});

describe('organizations', () => {
  it("see only their own: another organization's ids answer 404, lists leave them out", async () => {
    const user = await createUser();
    const group = expectOk(
      await directory().post('/Groups', {
        schemas: [GROUP],
        displayName: `Mine ${unique()}`,
        members: [{ value: user.id }],
      }),
      201,
    );
    const okta = scim(otherToken.token);
    expectScimError(await okta.get(`/Users/${user.id}`), 404);
    expectScimError(await okta.put(`/Users/${user.id}`, entraUser()), 404);
    expectScimError(
      await okta.patch(`/Users/${user.id}`, {
        schemas: [PATCH_OP],
        Operations: [{ op: 'replace', path: 'active', value: false }],
      }),
      404,
    );
    expectScimError(await okta.delete(`/Users/${user.id}`), 404);
    expectScimError(await okta.get(`/Groups/${group.id}`), 404);
    expectScimError(
      await okta.patch(`/Groups/${group.id}`, { schemas: [PATCH_OP], Operations: [{ op: 'remove', path: 'members' }] }),
      404,
    );
    expectScimError(await okta.delete(`/Groups/${group.id}`), 404);
    expect(expectOk(await okta.get(`/Users?filter=${encodeURIComponent(`id eq "${user.id}"`)}`)).totalResults).toBe(0);
    expect(expectOk(await okta.get('/Groups')).totalResults).toBe(0);
    // Acme's user is no member to Other's groups
    expectScimError(
      await okta.post('/Groups', { schemas: [GROUP], displayName: 'Steal', members: [{ value: user.id }] }),
      400,
      'invalidValue',
    );
    // and all of it is as it was
    expect(expectOk(await directory().get(`/Users/${user.id}`)).active).toBe(true);
    expect(expectOk(await directory().get(`/Groups/${group.id}`)).members).toHaveLength(1);
  });
});

describe('hostile requests', () => {
  it('answer 4xx in the SCIM error schema, never 500', async () => {
    expectScimError(await raw('POST', '/Users', '{"userName": "a@acme.test"'), 400, 'invalidSyntax');
    expectScimError(await raw('POST', '/Users', 'not json'), 400, 'invalidSyntax');
    expectScimError(await raw('POST', '/Users', ''), 400, 'invalidSyntax');
    expectScimError(
      await raw('POST', '/Users', new Uint8Array([0x7b, 0x22, 0x75, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])),
      400,
      'invalidSyntax',
    );
    expectScimError(
      await raw('POST', '/Users', new Uint8Array([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d])),
      400,
      'invalidSyntax',
    );
    expectScimError(
      await raw('POST', '/Users', JSON.stringify({ userName: 'nul\u0000@acme.test' })),
      400,
      'invalidValue',
    );
    expectScimError(
      await raw('POST', '/Users', JSON.stringify({ userName: 'a@acme.test', name: { givenName: 'a\u0000' } })),
      400,
      'invalidValue',
    );
    expectScimError(await raw('POST', '/Users', '{"userName": "\\ud800@acme.test"}'), 400, 'invalidValue');
    expectScimError(await raw('POST', '/Users', `${'['.repeat(5000)}${']'.repeat(5000)}`), 400, 'invalidValue');
    expectScimError(
      await raw('POST', '/Users', JSON.stringify({ userName: 'a@acme.test' }), { 'content-type': 'text/plain' }),
      415,
    );
    expectScimError(
      await raw('POST', '/Users', JSON.stringify({ userName: 'a@acme.test' }), {
        'content-type': 'application/json; charset=latin1',
      }),
      415,
    );
    expectScimError(
      await raw('POST', '/Users', JSON.stringify({ userName: 'a@acme.test' }), { 'content-encoding': 'gzip' }),
      415,
    );
    const big = JSON.stringify({ ...entraUser(), padding: 'x'.repeat(5 * 1024 * 1024) });
    expectScimError(await raw('POST', '/Users', big), 413);
    expectScimError(await raw('PATCH', '/Users/x', 'null'), 400, 'invalidSyntax');
    for (const body of ['null', '[]', '"a"', '5', 'true'])
      expectScimError(await raw('POST', '/Users', body), 400, 'invalidValue');
    for (const body of ['null', '[]', '"filter"'])
      expectScimError(await raw('POST', '/Groups/.search', body), 400, 'invalidSyntax');
    expectScimError(await raw('POST', '/Groups/.search', '{"count": "many"}'), 400, 'invalidValue');
    // Plain JSON is fine too
    expectOk(
      await raw('POST', '/Users', JSON.stringify(entraUser()), { 'content-type': 'application/json; charset=utf-8' }),
      201,
    );
  });

  it('answer 404 on unknown paths and 405 on methods a path does not serve, in the SCIM shape', async () => {
    expectScimError(await directory().get('/Devices'), 404);
    expectScimError(await directory().get(''), 404);
    expectScimError(await directory().get('/Users/a/b'), 404);
    expectScimError(
      await directory().post('/Bulk', {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'],
        Operations: [],
      }),
      404,
    );
    const reply = await directory().delete('/Users');
    expectScimError(reply, 405);
    expect(reply.headers.get('allow')).toContain('GET');
    expectScimError(await directory().put('/ServiceProviderConfig', {}), 405);
    expectScimError(await raw('PROPFIND', '/Users', undefined), 405);
  });
});

describe("the directory's log", () => {
  it('keeps each request of an accepted token: method, path without query, status, SCIM type and detail', async () => {
    const token = (await acme.owner.api.post('/api/v1/scim-tokens', { name: 'logged' })).body;
    const api = scim(token.token);
    await api.get('/Users?filter=userName%20eq%20%22x%22');
    await api.post('/Users', { userName: 5 });
    await api.get('/Groups/nope');
    await raw('GET', '/Users', undefined, { authorization: 'Bearer tsd_unknown' });
    const rows = await server.base.db.scimRequest.findMany({ where: { tokenId: token.id }, orderBy: { id: 'asc' } });
    expect(rows.map((r) => [r.method, r.path, r.status, r.scimType])).toEqual([
      ['GET', '/scim/v2/Users', 200, null],
      ['POST', '/scim/v2/Users', 400, 'invalidValue'],
      ['GET', '/scim/v2/Groups/nope', 404, null],
    ]);
    expect(rows[0]!.organizationId).toBe(acme.id);
    expect(rows[1]!.detail).toMatch(/userName/);
    // what the admins read
    const page = await acme.owner.api.post('/graphql', {
      query: `{ scimRequests(organizationId: "${acme.id}") { path status } }`,
    });
    expect(page.body.data.scimRequests.length).toBeGreaterThan(3);
  });
});

describe('the rate limit', () => {
  it('is per token, reported in headers, and answered 429 with Retry-After in the SCIM shape', async () => {
    const limited = await startTestServer({ env: { SCIM_RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const admin = (await signIn(limited.url, ADMIN.email, ADMIN.password)).api;
      const tenant = await createTenant(limited.url, admin, 'Limited');
      const one = (await tenant.owner.api.post('/api/v1/scim-tokens', { name: 'one' })).body.token;
      const two = (await tenant.owner.api.post('/api/v1/scim-tokens', { name: 'two' })).body.token;
      const get = (token: string) => client(limited.url, { token }).get('/scim/v2/Users');
      for (let i = 0; i < 3; i++) {
        const reply = await get(one);
        expect(reply.status).toBe(200);
        expect(reply.headers.get('ratelimit-policy')).toBe('3;w=60');
        expect(reply.headers.get('ratelimit-remaining')).toBe(String(2 - i));
      }
      const refused = await get(one);
      expectScimError(refused, 429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      // another token of the same organization has its own
      expect((await get(two)).status).toBe(200);
      // and the organization's REST limit is not spent by the directory
      expect((await tenant.owner.api.get('/api/v1/scim-tokens')).headers.get('ratelimit-policy')).not.toContain(
        '3;w=60',
      );
    } finally {
      await limited.stop();
    }
  });
});
