import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { movableClock } from '../helpers/clock.ts';

const clock = movableClock();
let server: TestServer;
let admin: Client;

beforeAll(async () => {
  // Small limits so the test stays fast; the rule is the same at the interface's 100 and 1000.
  server = await startTestServer({
    clock,
    env: { RATE_LIMIT_API_KEY_PER_MINUTE: '5', RATE_LIMIT_ORGANIZATION_PER_HOUR: '12' },
  });
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
});
afterAll(() => server?.stop());

describe('rate limits', () => {
  it('limits an API key per minute, says so in headers, and answers 429 with Retry-After past it', async () => {
    const created = await admin.post('/api/v1/api-keys', { name: 'limited' });
    expect(created.status).toBe(201);
    const key = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    const replies = [];
    for (let i = 0; i < 5; i++) replies.push(await key.get('/api/v1/orgs'));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(replies[0]!.headers.get('ratelimit-policy')).toContain('5;w=60');
    expect(replies[0]!.headers.get('ratelimit-limit')).toBe('5');
    expect(replies[4]!.headers.get('ratelimit-remaining')).toBe('0');
    expect(replies[4]!.headers.get('ratelimit')).toMatch(/^limit=5, remaining=0, reset=\d+$/);

    const over = await key.get('/api/v1/orgs');
    expect(over.status).toBe(429);
    expect(over.body.error).toBe('rate_limited');
    // The numbers in force, not the interface's defaults.
    expect(over.body.error_description).toBe('Rate limit exceeded: 5 requests a minute per API key');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(60);

    clock.advance(61);
    expect((await key.get('/api/v1/orgs')).status).toBe(200);
  });

  it('limits an organization per hour across all its callers', async () => {
    clock.advance(3601);
    const statuses: number[] = [];
    for (let i = 0; i < 13; i++) statuses.push((await admin.get('/api/v1/orgs')).status);
    expect(statuses.slice(0, 12).every((s) => s === 200)).toBe(true);
    expect(statuses[12]).toBe(429);
    expect((await admin.get('/api/v1/orgs')).body.error_description).toBe(
      'Rate limit exceeded: 12 requests an hour per organization',
    );
    // GraphQL counts against the same organization.
    const gql = await admin.post('/graphql', { query: '{ viewer { user { id } } }' });
    expect(gql.status).toBe(429);
    clock.advance(3601);
    expect((await admin.get('/api/v1/orgs')).status).toBe(200);
  });

  it('does not count anonymous requests against anyone', async () => {
    const anon = client(server.url);
    const reply = await anon.get('/api/v1/orgs');
    expect(reply.status).toBe(401);
    expect(reply.headers.get('ratelimit-policy')).toBeNull();
  });
});

describe('rate-limit defaults', () => {
  it("are the interface's 100 a minute per API key and 1000 an hour per organization (and 6,000 a minute per SCIM token), from one place", async () => {
    const { loadConfig } = await import('../../server/config.ts');
    const { DEFAULT_RATE_LIMITS } = await import('../../schema/limits/rate-limits.ts');
    expect(DEFAULT_RATE_LIMITS).toEqual({ apiKeyPerMinute: 100, organizationPerHour: 1000, scimTokenPerMinute: 6000 });
    const config = await loadConfig({ SECRET_KEY: 'a'.repeat(64), DATA_DIR: '/tmp' });
    expect(config.rateLimits).toEqual(DEFAULT_RATE_LIMITS);
  });
});
