// GET /oauth/authorize with a session, the hot path of every sign-in (issue 7): at most 3 SQL statements, no
// interactive transaction, and more concurrent requests than pool connections answered without an error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onStatement } from '../../schema/db.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Client } from '../helpers/http.ts';
import type { Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  browserGet,
  codeFrom,
  decideConsent,
  registerClient,
  startWithSignedInMember,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/cb';
let server: TestServer;
let admin: Client;
let tenant: Tenant;
let session: string;
let direct: RegisteredClient;
let consenting: RegisteredClient;

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember({ poolSize: 2 }));
  const body = {
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email', 'profile'],
    organization_id: tenant.id,
  };
  direct = await registerClient(admin, { ...body, name: 'First party', consent_required: false });
  consenting = await registerClient(admin, { ...body, name: 'Asks once' });
});
afterAll(() => server?.stop());

const params = (c: RegisteredClient, state = 's') => ({
  client_id: c.client_id,
  redirect_uri: REDIRECT,
  response_type: 'code',
  scope: 'openid email',
  nonce: 'n',
  state,
});

/** The statements sent while `fn` runs alone. */
async function statementsOf<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const stop = onStatement(server.base.db, (sql) => statements.push(sql));
  try {
    return { result: await fn(), statements };
  } finally {
    stop();
  }
}

function expectHotPath(statements: string[]) {
  expect(statements.length, statements.join('\n---\n')).toBeLessThanOrEqual(3);
  expect(
    statements.filter((s) => /^\s*(begin|start transaction)/i.test(s)),
    statements.join('\n---\n'),
  ).toEqual([]);
}

describe('authorize with a session', () => {
  it('consent not required: a code in at most 3 statements, no transaction', async () => {
    await authorize(server.url, session, params(direct)); // warm: signing keys loaded
    const { result, statements } = await statementsOf(() => authorize(server.url, session, params(direct)));
    expect(codeFrom(result)).toMatch(/^tsa_/);
    expectHotPath(statements);
  });

  it('consent remembered: a code in at most 3 statements', async () => {
    const consentPage = await authorize(server.url, session, params(consenting));
    expect(consentPage.pathname).toBe('/consent');
    codeFrom(await decideConsent(server.url, session, consentPage));
    const { result, statements } = await statementsOf(() => authorize(server.url, session, params(consenting)));
    expect(codeFrom(result)).toMatch(/^tsa_/);
    expectHotPath(statements);
  });

  it('POST /oauth/authorize: the same budget', async () => {
    const { result, statements } = await statementsOf(() =>
      fetch(`${server.url}/oauth/authorize`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: `tessera_session=${session}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(params(direct)),
      }),
    );
    expect(result.status).toBe(303);
    expect(new URL(result.headers.get('location')!).searchParams.get('code')).toMatch(/^tsa_/);
    expectHotPath(statements);
  });

  it('16 concurrent requests on a pool of 2 connections: 16 codes, no error', async () => {
    const replies = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        browserGet(`${server.url}/oauth/authorize?${new URLSearchParams(params(direct, `c${i}`))}`, session),
      ),
    );
    const codes = replies.map((r) => new URL(r.headers.get('location') ?? 'x:').searchParams.get('code'));
    expect(replies.map((r) => r.status)).toEqual(Array(16).fill(302));
    expect(new Set(codes).size).toBe(16);
    expect(codes.every((c) => c?.startsWith('tsa_'))).toBe(true);
  });
});
