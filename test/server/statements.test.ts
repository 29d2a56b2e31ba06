// Round trips per request on the hot paths (docs/architecture.md#hot-paths, issue 7): every SQL statement the service sends is counted
// through the database layer's hook (schema/db.ts onStatement), so a change that adds a round trip fails here.
// Budgets: code exchange and refresh at most 4 (client authentication included), userinfo 1, session or API-key
// authentication 1 (plus the rate-limit counters of the route around it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onStatement } from '../../schema/db.ts';
import { makeContext } from '../../schema/context.ts';
import { resolveActor, type Credentials } from '../../schema/actor.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Client } from '../helpers/http.ts';
import type { Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  exchangeCode,
  registerClient,
  startWithSignedInMember,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/cb';
let server: TestServer;
let admin: Client;
let tenant: Tenant;
let session: string;
let app: RegisteredClient;
let machine: RegisteredClient;
let apiKey: { key: string; secret: string };
const measured: Record<string, number> = {};

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember());
  app = await registerClient(admin, {
    name: 'Counted',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email', 'profile', 'organization'],
    consent_required: false,
    organization_id: tenant.id,
  });
  machine = await registerClient(admin, {
    name: 'Machine',
    grant_types: ['client_credentials'],
    allowed_scopes: ['openid'],
    organization_id: tenant.id,
  });
  const key = await tenant.admin.api.post('/api/v1/api-keys', { name: 'counted' });
  expect(key.status).toBe(201);
  apiKey = { key: key.body.key, secret: key.body.secret };
});
afterAll(async () => {
  console.log(
    `statements per request:\n${Object.entries(measured)
      .map(([k, v]) => `  ${k.padEnd(34)} ${v}`)
      .join('\n')}`,
  );
  await server?.stop();
});

/** Runs `fn` alone and returns what it answered and the SQL statements sent meanwhile. */
async function counted<T>(name: string, fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const stop = onStatement(server.base.db, (sql) => statements.push(sql));
  try {
    const result = await fn();
    measured[name] = statements.length;
    return { result, statements };
  } finally {
    stop();
  }
}

const scope = 'openid email profile organization';
const newCode = async () =>
  codeFrom(
    await authorize(server.url, session, {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope,
      nonce: 'n',
      state: 's',
    }),
  );
const refresh = (token: string) =>
  tokenRequest(server.url, {
    grant_type: 'refresh_token',
    refresh_token: token,
    client_id: app.client_id,
    client_secret: app.client_secret,
  });
const authenticate = (credentials: Credentials) =>
  resolveActor(
    makeContext(server.base, null, { requestId: 'statements', ip: '127.0.0.1', userAgent: 'vitest' }),
    credentials,
  );

describe('statements per request', () => {
  it('code exchange: at most 4, client authentication included, and no interactive transaction', async () => {
    const code = await newCode();
    const { result, statements } = await counted('token: authorization_code', () =>
      exchangeCode(server.url, app, code, REDIRECT),
    );
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body.id_token).toBeTruthy();
    expect(statements.length, statements.join('\n---\n')).toBeLessThanOrEqual(4);
    expect(statements.filter((s) => /^\s*begin/i.test(s))).toEqual([]);
  });

  it('refresh: at most 4', async () => {
    const first = await exchangeCode(server.url, app, await newCode(), REDIRECT);
    // The first use of a consent touches its last-used time; the budget holds either way.
    const { result, statements } = await counted('token: refresh_token', () => refresh(first.body.refresh_token));
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(statements.length, statements.join('\n---\n')).toBeLessThanOrEqual(4);
    expect(statements.filter((s) => /^\s*begin/i.test(s))).toEqual([]);
  });

  it('client_credentials: at most 2', async () => {
    const { result, statements } = await counted('token: client_credentials', () =>
      tokenRequest(server.url, {
        grant_type: 'client_credentials',
        client_id: machine.client_id,
        client_secret: machine.client_secret,
      }),
    );
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(statements.length, statements.join('\n---\n')).toBeLessThanOrEqual(2);
  });

  it('authorize with a session: at most 3, and no interactive transaction', async () => {
    await newCode();
    const { result, statements } = await counted('authorize: with a session', () =>
      authorize(server.url, session, {
        client_id: app.client_id,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope,
        nonce: 'n',
        state: 's',
      }),
    );
    expect(codeFrom(result)).toMatch(/^tsa_/);
    expect(statements.length, statements.join('\n---\n')).toBeLessThanOrEqual(3);
    expect(statements.filter((s) => /^\s*begin/i.test(s))).toEqual([]);
  });

  it('userinfo: 1', async () => {
    const tokens = await exchangeCode(server.url, app, await newCode(), REDIRECT);
    const { result, statements } = await counted('userinfo', () =>
      fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.body.access_token}` } }),
    );
    expect(result.status).toBe(200);
    expect((await result.json()).email).toBe(tenant.member.email);
    expect(statements.length, statements.join('\n---\n')).toBeLessThanOrEqual(1);
  });

  it('introspection and revocation: at most 2 each (client authentication included)', async () => {
    const tokens = await exchangeCode(server.url, app, await newCode(), REDIRECT);
    const form = (path: string, token: string) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, client_id: app.client_id, client_secret: app.client_secret }),
      });
    for (const [name, token] of [
      ['access token', tokens.body.access_token],
      ['refresh token', tokens.body.refresh_token],
    ] as const) {
      const introspected = await counted(`introspect: ${name}`, () => form('/oauth/introspect', token));
      expect((await introspected.result.json()).active).toBe(true);
      expect(introspected.statements.length, introspected.statements.join('\n---\n')).toBeLessThanOrEqual(2);
    }
    const revoked = await counted('revoke: refresh token', () => form('/oauth/revoke', tokens.body.refresh_token));
    expect(revoked.result.status).toBe(200);
    expect(revoked.statements.length, revoked.statements.join('\n---\n')).toBeLessThanOrEqual(2);
  });

  it('session authentication: 1, by cookie and by Bearer token', async () => {
    const cookie = await counted('auth: session cookie', () => authenticate({ sessionCookie: session }));
    expect(cookie.result).toMatchObject({ kind: 'user', userId: tenant.member.id });
    expect(cookie.statements).toHaveLength(1);
    const bearer = await counted('auth: session bearer', () => authenticate({ bearer: session }));
    expect(bearer.result).toMatchObject({ kind: 'user' });
    expect(bearer.statements).toHaveLength(1);
  });

  it('API-key authentication: 1, also when it records the last use', async () => {
    for (const name of ['auth: API key (first use)', 'auth: API key']) {
      const { result, statements } = await counted(name, () =>
        authenticate({ bearer: apiKey.key, apiSecret: apiKey.secret }),
      );
      expect(result).toMatchObject({ kind: 'apiKey', organizationId: tenant.id });
      expect(statements.length, statements.join('\n---\n')).toBe(1);
    }
  });

  it('access-token authentication: 1', async () => {
    const tokens = await exchangeCode(server.url, app, await newCode(), REDIRECT);
    const { result, statements } = await counted('auth: access token', () =>
      authenticate({ bearer: tokens.body.access_token }),
    );
    expect(result).toMatchObject({ kind: 'oauth', organizationId: tenant.id });
    expect(statements).toHaveLength(1);
  });

  it('a REST call with an API key: the authentication and the rate-limit counters come first', async () => {
    const { result, statements } = await counted('REST GET /api/v1/orgs with API key', () =>
      fetch(`${server.url}/api/v1/orgs`, {
        headers: { authorization: `Bearer ${apiKey.key}`, 'x-api-secret': apiKey.secret },
      }),
    );
    expect(result.status).toBe(200);
    expect(statements[0]).toMatch(/api_keys/);
    expect(statements.slice(1).filter((s) => /api_keys/.test(s))).toEqual([]);
  });
});
