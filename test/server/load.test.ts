// Load never turns into errors (docs/architecture.md#hot-paths, issue 7): with a pool of 2 connections, bursts of many more concurrent
// requests than connections on every hot path must queue and succeed, never fail. Before, interactive
// transactions that signed tokens (and queried outside their own connection) answered 500 (Prisma P2028).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  exchangeCode,
  registerClient,
  startWithSignedInMember,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const POOL = 2;
/** Concurrent requests per burst: 12 times the pool. */
const BURST = 24;
const REDIRECT = 'https://rp.example.test/cb';

let server: TestServer;
let admin: Client;
let tenant: Tenant;
let session: string;
let app: RegisteredClient;
let machine: RegisteredClient;
let apiKey: { key: string; secret: string };

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember({ poolSize: POOL }));
  app = await registerClient(admin, {
    name: 'Loaded',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email', 'profile'],
    consent_required: false,
    organization_id: tenant.id,
  });
  machine = await registerClient(admin, {
    name: 'Machine',
    grant_types: ['client_credentials'],
    allowed_scopes: ['openid'],
    organization_id: tenant.id,
  });
  const key = await tenant.admin.api.post('/api/v1/api-keys', { name: 'load' });
  apiKey = { key: key.body.key, secret: key.body.secret };
}, 60_000);
afterAll(() => server?.stop());

/** Sends `size` requests at once and expects every answer to be a success or a redirect. */
async function burst(name: string, send: (i: number) => Promise<{ status: number; text?: string }>, size = BURST) {
  const answers = await Promise.all(
    Array.from({ length: size }, (_, i) => send(i).catch((error: Error) => ({ status: 0, text: error.message }))),
  );
  const failed = answers.filter((a) => a.status < 200 || a.status >= 400);
  expect(failed, `${name}: ${failed.length} of ${size} failed: ${JSON.stringify(failed.slice(0, 3))}`).toEqual([]);
}

const reply = async (res: Response) => ({
  status: res.status,
  text: res.status >= 400 ? await res.text() : (await res.arrayBuffer(), undefined),
});
const form = (path: string, params: Record<string, string>) =>
  fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  }).then(reply);
const authorizeParams = () => ({
  client_id: app.client_id,
  redirect_uri: REDIRECT,
  response_type: 'code',
  scope: 'openid email',
  state: 's',
  nonce: 'n',
});
const newCode = async () => codeFrom(await authorize(server.url, session, authorizeParams()));
const codes = (n: number) => Promise.all(Array.from({ length: n }, newCode));
const exchangeAll = async (n: number) =>
  (await Promise.all((await codes(n)).map((code) => exchangeCode(server.url, app, code, REDIRECT)))).map((r) => r.body);

describe(`${BURST} concurrent requests on a pool of ${POOL} connections`, () => {
  it('token: authorization_code', async () => {
    const list = await codes(BURST);
    await burst('authorization_code', async (i) => {
      const r = await exchangeCode(server.url, app, list[i]!, REDIRECT);
      return { status: r.status, text: JSON.stringify(r.body) };
    });
  });

  it('token: 20 concurrent redemptions of one code, exactly one wins, and the replays end its grant', async () => {
    const code = await newCode();
    const replies = await Promise.all(Array.from({ length: 20 }, () => exchangeCode(server.url, app, code, REDIRECT)));
    const won = replies.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    expect(replies.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(19);
    const info = await fetch(`${server.url}/oauth/userinfo`, {
      headers: { authorization: `Bearer ${won[0]!.body.access_token}` },
    });
    expect(info.status).toBe(401);
  });

  it('token: refresh_token', async () => {
    const tokens = await exchangeAll(BURST);
    await burst('refresh_token', (i) =>
      form('/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: tokens[i].refresh_token,
        client_id: app.client_id,
        client_secret: app.client_secret,
      }),
    );
  });

  it('token: client_credentials', async () => {
    await burst('client_credentials', () =>
      form('/oauth/token', {
        grant_type: 'client_credentials',
        client_id: machine.client_id,
        client_secret: machine.client_secret,
      }),
    );
  });

  it('userinfo, introspection and revocation', async () => {
    const tokens = await exchangeAll(BURST);
    await burst('userinfo', (i) =>
      fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens[i].access_token}` } }).then(
        reply,
      ),
    );
    await burst('introspection', (i) =>
      form('/oauth/introspect', {
        token: tokens[i].access_token,
        client_id: app.client_id,
        client_secret: app.client_secret,
      }),
    );
    await burst('revocation', (i) =>
      form('/oauth/revoke', {
        token: tokens[i].refresh_token,
        client_id: app.client_id,
        client_secret: app.client_secret,
      }),
    );
  });

  it('login: 24 at once to one account, from one address', async () => {
    // Right passwords are never counted by the sign-in throttle, so a crowd signing in to one account (a shared
    // demo account, a load balancer's health check) queues rather than being refused.
    await burst(
      'login',
      () => client(server.url).post('/api/v1/auth/login', { email: tenant.member.email, password: PASSWORD }),
      24,
    );
  });

  it('REST with an API key and with a session, and GraphQL', async () => {
    const withKey = client(server.url, { apiKey });
    await burst('REST with API key', () => withKey.get('/api/v1/orgs'));
    await burst('REST with session', () => tenant.member.api.get('/api/v1/users/me'));
    await burst('GraphQL', () => tenant.member.api.post('/graphql', { query: '{ me { id email } }' }));
  });

  it('a REST write with a session (an interactive transaction in the service)', async () => {
    const owner = (await signIn(server.url, tenant.owner.email, PASSWORD)).api;
    await burst('POST /api/v1/api-keys', (i) => owner.post('/api/v1/api-keys', { name: `burst ${i}` }));
  });

  it('authorize GET and POST with a session cookie', async () => {
    const cookie = { cookie: `tessera_session=${session}` };
    await burst('authorize GET', () =>
      fetch(`${server.url}/oauth/authorize?${new URLSearchParams(authorizeParams())}`, {
        redirect: 'manual',
        headers: cookie,
      }).then(reply),
    );
    await burst('authorize POST', () =>
      fetch(`${server.url}/oauth/authorize`, {
        method: 'POST',
        redirect: 'manual',
        body: new URLSearchParams(authorizeParams()),
        headers: { ...cookie, 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
      }).then(reply),
    );
  });
});
