// GET /api/v1/mails and the mails query: a cursor that no page gave is refused with 400 (a validation error in
// GraphQL), as on every list, instead of being compared with the ids as text and answering a wrong page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import { uuidv7 } from '../../schema/lib/ids.ts';

let server: TestServer;
let platform: Client;

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
});
afterAll(() => server?.stop());

const QUERY = 'query($cursor: String) { mails(cursor: $cursor) { items { id } nextCursor } }';

describe('the mail list cursor', () => {
  it('refuses a cursor that is not one, over REST and GraphQL', async () => {
    for (const cursor of ['garbage', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', uuidv7().toUpperCase()]) {
      const path = `/api/v1/mails?${new URLSearchParams({ cursor })}`;
      const rest = await platform.get(path);
      expect(rest.status, cursor).toBe(400);
      expectMatchesOpenApi('GET', path, rest);
      expect(rest.body.details).toEqual([{ path: 'cursor', message: 'must be the cursor of a previous page' }]);

      const gql = await platform.post('/graphql', { query: QUERY, variables: { cursor } });
      expect(gql.body.data?.mails ?? null, cursor).toBeNull();
      expect(gql.body.errors?.[0]?.extensions?.code, JSON.stringify(gql.body)).toBe('invalid_request');
    }
  });

  it('takes an id as the cursor', async () => {
    const path = `/api/v1/mails?${new URLSearchParams({ cursor: uuidv7() })}`;
    const rest = await platform.get(path);
    expect(rest.status).toBe(200);
    expectMatchesOpenApi('GET', path, rest);
    const gql = await platform.post('/graphql', { query: QUERY, variables: { cursor: uuidv7() } });
    expect(gql.body.errors).toBeUndefined();
  });
});
