import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { GraphQLInt, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { pino } from 'pino';
import { createGraphqlServer } from '../../server/graphql/yoga.ts';
import { NotFoundError } from '../../schema/errors/index.ts';

let server: TestServer;
let admin: Client;

beforeAll(async () => {
  server = await startTestServer();
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
});
afterAll(() => server?.stop());

const gql = (api: Client, query: string, variables?: Record<string, unknown>) =>
  api.post('/graphql', { query, variables });

describe('/graphql', () => {
  it('answers queries as the caller', async () => {
    const reply = await gql(admin, '{ viewer { user { email } platformAdmin } }');
    expect(reply.status).toBe(200);
    expect(reply.body.data.viewer).toEqual({ user: { email: ADMIN.email }, platformAdmin: true });
  });

  it('returns typed errors for correctable mutation problems', async () => {
    const reply = await gql(
      admin,
      'mutation { createOrganization(input: { name: "" }) { __typename ... on UserError { code details { path message } } } }',
    );
    expect(reply.body.data.createOrganization).toEqual({
      __typename: 'UserError',
      code: 'invalid_request',
      details: [{ path: 'name', message: 'must not be empty' }],
    });
  });

  it('refuses fields the caller may not use with a top-level error and a stable code', async () => {
    const anonymous = await gql(client(server.url), '{ users { items { id } } }');
    expect(anonymous.body.errors[0].extensions.code).toBe('unauthenticated');
    const other = await gql(admin, '{ organization(id: "no-such-organization") { id } }');
    expect(other.body.errors[0].extensions.code).toBe('not_found');
  });

  it('rejects queries nested too deep', async () => {
    let selection = 'id';
    for (let i = 0; i < 12; i++) selection = `user { ${selection} }`;
    const reply = await gql(admin, `{ members(organizationId: "x") { ${selection} } }`);
    expect(reply.body.errors?.[0]?.message).toMatch(/depth/i);
    expect(reply.body.data ?? null).toBeNull();
  });

  it('rejects too many aliases', async () => {
    const aliases = Array.from({ length: 20 }, (_, i) => `a${i}: viewer { platformAdmin }`).join(' ');
    const reply = await gql(admin, `{ ${aliases} }`);
    expect(reply.body.errors?.[0]?.message).toMatch(/alias/i);
  });

  it('rejects oversized documents by token count', async () => {
    const fields = Array.from({ length: 2500 }, () => '__typename').join(' ');
    const reply = await gql(admin, `{ ${fields} }`);
    expect(reply.body.errors?.[0]?.message).toMatch(/token/i);
  });

  it('masks unexpected errors and logs them, but passes domain errors through', async () => {
    // Our Yoga setup over a schema whose resolvers fail: one internally, one with a DomainError.
    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          broken: {
            type: GraphQLString,
            resolve: () => {
              throw new Error('connection string postgres://secret@db leaked');
            },
          },
          missing: {
            type: GraphQLString,
            resolve: () => {
              throw new NotFoundError('Thing');
            },
          },
        },
      }),
    });
    const logged: unknown[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const yoga = createGraphqlServer(schema, { production: true, logger });
    const res = await yoga.fetch(
      'http://x/graphql',
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ broken missing }' }),
      },
      { tessera: {} as never },
    );
    const body = await res.json();
    expect(JSON.stringify(body)).not.toContain('secret');
    const [broken, missing] = [...body.errors].sort((a: any, b: any) => a.path[0].localeCompare(b.path[0]));
    expect(broken.extensions.code).toBe('internal_error');
    expect(missing).toMatchObject({ message: 'Thing not found', extensions: { code: 'not_found' } });
    expect(JSON.stringify(logged)).toContain('connection string postgres://secret@db leaked');
  });

  it('serves GraphiQL to a browser outside production, from the package: nothing loads from another host', async () => {
    const res = await fetch(`${server.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('GraphiQL');
    expect(page).toContain('renderYogaGraphiQL');
    // No <script src>, stylesheet or worker fetched from a CDN (unpkg.com): the page works offline.
    expect(page).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet[^>]+href=["']?https?:|unpkg\.com|jsdelivr/);
  });
});

describe('/graphql in production', () => {
  let prod: TestServer;
  beforeAll(async () => {
    prod = await startTestServer({ env: { NODE_ENV: 'production' } });
  });
  afterAll(() => prod?.stop());

  it('does not serve GraphiQL', async () => {
    const res = await fetch(`${prod.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(await res.text()).not.toContain('GraphiQL');
  });

  it('answers no introspection to an anonymous caller, and still to a signed-in one', async () => {
    const query = '{ __schema { types { name } } }';
    const anonymous = await gql(client(prod.url), query);
    const typeQuery = await gql(client(prod.url), '{ __type(name: "Webhook") { fields { name } } }');
    const signedIn = await gql((await signIn(prod.url, ADMIN.email, ADMIN.password)).api, query);

    expect(anonymous.body.data).toBeUndefined();
    expect(anonymous.body.errors[0].message).toMatch(/introspection/i);
    expect(typeQuery.body.errors[0].message).toMatch(/introspection/i);
    expect(JSON.stringify([anonymous.body, typeQuery.body])).not.toMatch(/Webhook|secret/);
    // The anonymous refusal is not served from the validation cache to a caller who may, nor the reverse.
    expect(signedIn.body.errors).toBeUndefined();
    expect(signedIn.body.data.__schema.types.map((t: { name: string }) => t.name)).toContain('Webhook');
    expect((await gql(client(prod.url), query)).body.errors[0].message).toMatch(/introspection/i);
  });

  it('suggests no names in errors: fields, arguments, enum values in the document and in variables, and over REST', async () => {
    const prodAdmin = (await signIn(prod.url, ADMIN.email, ADMIN.password)).api;
    const replies = [
      await gql(prodAdmin, '{ viewr { user { id } } }'),
      await gql(prodAdmin, '{ viewer { usr { id } } }'),
      await gql(prodAdmin, 'query($s: SubscriptionStatus) { subscriptions(status: $s) { items { id } } }', {
        s: 'actve',
      }),
      await gql(prodAdmin, '{ subscriptions(status: actve) { items { id } } }'),
      await gql(prodAdmin, 'mutation { createOrganization(input: { nam: "x" }) { __typename } }'),
      await prodAdmin.patch('/api/v1/subscriptions/00000000-0000-7000-8000-000000000000', { status: 'actve' }),
      await prodAdmin.get('/api/v1/audit-logs?outcome=sucess'),
    ];
    for (const reply of replies) {
      expect(reply.status, JSON.stringify(reply.body)).toBeLessThan(500);
      expect(JSON.stringify(reply.body)).not.toMatch(/did you mean/i);
    }
    // Outside production, GraphiQL's users keep graphql's suggestions.
    expect(JSON.stringify((await gql(admin, '{ viewr { user { id } } }')).body)).toMatch(/Did you mean/);
  });
});

describe('/graphql across origins', () => {
  const EVIL = 'http://evil.example';

  it('sends no CORS headers to another origin, credentialed or not, on the request or the preflight', async () => {
    const request = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: {
        origin: EVIL,
        'content-type': 'application/json',
        authorization: `Bearer ${(await signIn(server.url, ADMIN.email, ADMIN.password)).login.token}`,
      },
      body: JSON.stringify({ query: '{ viewer { user { email } } }' }),
    });
    const preflight = await fetch(`${server.url}/graphql`, {
      method: 'OPTIONS',
      headers: {
        origin: EVIL,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, authorization',
      },
    });
    const sameHostOtherPort = await fetch(
      `${server.url}/graphql?query=${encodeURIComponent('{ viewer { platformAdmin } }')}`,
      { headers: { origin: 'http://127.0.0.1:1' } },
    );

    for (const res of [request, preflight, sameHostOtherPort]) {
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('access-control-allow-headers')).toBeNull();
    }
  });

  it('the REST API sends none either', async () => {
    const res = await fetch(`${server.url}/api/v1/users/me`, { headers: { origin: EVIL } });
    const preflight = await fetch(`${server.url}/api/v1/api-keys`, {
      method: 'OPTIONS',
      headers: { origin: EVIL, 'access-control-request-method': 'POST' },
    });
    for (const r of [res, preflight]) {
      expect(r.headers.get('access-control-allow-origin')).toBeNull();
      expect(r.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  it('answers GET and POST with Cache-Control: no-store', async () => {
    const get = await admin.get(`/graphql?query=${encodeURIComponent('{ viewer { user { email } } }')}`);
    const post = await gql(admin, '{ viewer { user { email } } }');
    expect(get.body.data.viewer.user.email).toBe(ADMIN.email);
    expect(get.headers.get('cache-control')).toBe('no-store');
    expect(post.headers.get('cache-control')).toBe('no-store');
  });
});

describe('/graphql input the database cannot store', () => {
  it('refuses a NUL in variables or in the document with a clear error, not an internal one', async () => {
    const admin2 = admin;
    const inVariables = await gql(
      admin2,
      'mutation($n: String!) { createOrganization(input: { name: $n }) { __typename } }',
      { n: 'a\u0000b' },
    );
    expect(inVariables.body.errors?.[0]?.extensions?.code).toBe('invalid_request');
    const inDocument = await gql(
      admin2,
      'mutation { createOrganization(input: { name: "a\\u0000b" }) { __typename } }',
    );
    expect(inDocument.body.errors?.[0]?.extensions?.code).toBe('invalid_request');
    expect(JSON.stringify([inVariables.body, inDocument.body])).not.toContain('internal_error');
  });

  it('refuses a lone surrogate in variables or in the document, which would be stored as U+FFFD or fail', async () => {
    const inVariables = await gql(
      admin,
      'mutation($n: String!) { createOrganization(input: { name: $n }) { __typename } }',
      { n: 'a\udfffb' },
    );
    expect(inVariables.body.errors?.[0]?.extensions?.code).toBe('invalid_request');
    expect(JSON.stringify(inVariables.body)).toContain('lone surrogate');
    // In the document, graphql-js's parser refuses the escape itself.
    const inDocument = await gql(admin, 'mutation { createOrganization(input: { name: "a\\udfffb" }) { __typename } }');
    expect(inDocument.body.errors?.[0]?.message).toMatch(/Unicode/);
    const paired = await gql(
      admin,
      'mutation($n: String!) { createOrganization(input: { name: $n }) { __typename } }',
      { n: 'Emoji 💥 Org' },
    );
    expect(paired.body.errors, JSON.stringify(paired.body)).toBeUndefined();
  });
});

describe('security headers', () => {
  it('are on API answers and portal pages alike', async () => {
    for (const path of ['/healthz', '/api/v1/orgs', '/login', '/.well-known/openid-configuration']) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('referrer-policy'), path).toBe('same-origin');
      expect(res.headers.get('content-security-policy'), path).toContain("frame-ancestors 'none'");
    }
  });
});

describe('/graphql requests the client got wrong', () => {
  it('answers variables that are not JSON in a GET or a form post with 400, not 500', async () => {
    for (const variables of ['x', '{', '{"a":']) {
      const get = await fetch(
        `${server.url}/graphql?query=${encodeURIComponent('{__typename}')}&variables=${encodeURIComponent(variables)}`,
      );
      expect(get.status, variables).toBe(400);
      expect((await get.json()).errors[0].extensions.code).toBe('invalid_request');
      const extensions = await fetch(
        `${server.url}/graphql?query=${encodeURIComponent('{__typename}')}&extensions=${encodeURIComponent(variables)}`,
      );
      expect(extensions.status, variables).toBe(400);
      const form = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `query={__typename}&variables=${encodeURIComponent(variables)}`,
      });
      expect(form.status, variables).toBe(400);
    }
    // Well-formed ones still work.
    const ok = await fetch(
      `${server.url}/graphql?query=${encodeURIComponent('query($x: Boolean!) { __typename @include(if: $x) }')}&variables=${encodeURIComponent('{"x":true}')}`,
    );
    expect(await ok.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('counts the body limit on the bytes read: a chunked 20 MB body is refused with 413', async () => {
    const bytes = new TextEncoder().encode(
      JSON.stringify({ query: '{ __typename }', variables: { x: 'a'.repeat(20_000_000) } }),
    );
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 1 << 20) controller.enqueue(bytes.subarray(i, i + (1 << 20)));
        controller.close();
      },
    });
    const res = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    await res.body?.cancel();
    // Just under the limit, chunked too, is still served.
    const small = new TextEncoder().encode(
      JSON.stringify({ query: '{ __typename }', variables: { x: 'a'.repeat(900_000) } }),
    );
    const ok = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      duplex: 'half',
      body: new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(small);
          c.close();
        },
      }),
    } as RequestInit);
    expect(await ok.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('answers variables of the wrong type with a clear invalid_request error, not internal_error', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'query($l: Int) { users(limit: $l) { items { id } } }',
        { l: 'abc' },
        /Int cannot represent non-integer value: "abc"/,
      ],
      ['query($l: Int) { users(limit: $l) { items { id } } }', { l: 1.5 }, /Int cannot represent/],
      [
        'mutation($i: CreateOrganizationInput!) { createOrganization(input: $i) { __typename } }',
        { i: { name: 'x', bogus: 1 } },
        /Field "bogus" is not defined/,
      ],
      [
        'mutation($i: CreateOrganizationInput!) { createOrganization(input: $i) { __typename } }',
        { i: { name: { $ne: null } } },
        /String cannot represent/,
      ],
      [
        'mutation($i: CreateOrganizationInput!) { createOrganization(input: $i) { __typename } }',
        {},
        /was not provided/,
      ],
    ];
    for (const [query, variables, message] of cases) {
      const reply = await gql(admin, query, variables);
      const label = `${query} ${JSON.stringify(variables)}`;
      expect(reply.status, label).toBe(400);
      expect(reply.body.errors?.[0]?.extensions?.code, label).toBe('invalid_request');
      expect(reply.body.errors[0].message, label).toMatch(message);
      expect(reply.body.data ?? null, label).toBeNull();
    }
  });

  it('does not log a client mistake at error level', async () => {
    const logged: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          twice: { type: GraphQLString, args: { n: { type: GraphQLInt } }, resolve: (_, { n }) => String(n * 2) },
        },
      }),
    });
    const yoga = createGraphqlServer(schema, { production: true, logger });
    const ask = (variables: unknown) =>
      yoga.fetch(
        'http://x/graphql',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: 'query($n: Int) { twice(n: $n) }', variables }),
        },
        { tessera: {} as never },
      );
    const wrong = await ask({ n: 'abc' });
    expect(wrong.status).toBe(400);
    expect((await wrong.json()).errors[0].extensions).toEqual({ code: 'invalid_request' });
    expect(await (await ask({ n: 2 })).json()).toEqual({ data: { twice: '4' } });
    expect(logged.filter((line) => line.level >= 50)).toEqual([]);
  });
});
