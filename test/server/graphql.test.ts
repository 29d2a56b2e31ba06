import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
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

const gql = (api: Client, query: string, variables?: Record<string, unknown>) => api.post('/graphql', { query, variables });

describe('/graphql', () => {
  it('answers queries as the caller', async () => {
    const reply = await gql(admin, '{ viewer { user { email } platformAdmin } }');
    expect(reply.status).toBe(200);
    expect(reply.body.data.viewer).toEqual({ user: { email: ADMIN.email }, platformAdmin: true });
  });

  it('returns typed errors for correctable mutation problems', async () => {
    const reply = await gql(admin, 'mutation { createOrganization(input: { name: "" }) { __typename ... on UserError { code details { path message } } } }');
    expect(reply.body.data.createOrganization).toEqual({ __typename: 'UserError', code: 'invalid_request', details: [{ path: 'name', message: 'must not be empty' }] });
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
          broken: { type: GraphQLString, resolve: () => { throw new Error('connection string postgres://secret@db leaked'); } },
          missing: { type: GraphQLString, resolve: () => { throw new NotFoundError('Thing'); } },
        },
      }),
    });
    const logged: unknown[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const yoga = createGraphqlServer(schema, { production: true, logger });
    const res = await yoga.fetch('http://x/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ broken missing }' }) }, { tessera: {} as never });
    const body = await res.json();
    expect(JSON.stringify(body)).not.toContain('secret');
    const [broken, missing] = [...body.errors].sort((a: any, b: any) => a.path[0].localeCompare(b.path[0]));
    expect(broken.extensions.code).toBe('internal_error');
    expect(missing).toMatchObject({ message: 'Thing not found', extensions: { code: 'not_found' } });
    expect(JSON.stringify(logged)).toContain('connection string postgres://secret@db leaked');
  });

  it('serves GraphiQL to a browser outside production', async () => {
    const res = await fetch(`${server.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('GraphiQL');
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
});

describe('/graphql input the database cannot store', () => {
  it('refuses a NUL in variables or in the document with a clear error, not an internal one', async () => {
    const admin2 = admin;
    const inVariables = await gql(admin2, 'mutation($n: String!) { createOrganization(input: { name: $n }) { __typename } }', { n: 'a\u0000b' });
    expect(inVariables.body.errors?.[0]?.extensions?.code).toBe('invalid_request');
    const inDocument = await gql(admin2, 'mutation { createOrganization(input: { name: "a\\u0000b" }) { __typename } }');
    expect(inDocument.body.errors?.[0]?.extensions?.code).toBe('invalid_request');
    expect(JSON.stringify([inVariables.body, inDocument.body])).not.toContain('internal_error');
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
