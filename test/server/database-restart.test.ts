// A database that goes away answers 503 with Retry-After, never 500, and the service recovers by itself when it
// comes back (docs/architecture.md#hot-paths, issue 7). PostgreSQL here is an embedded one of this test's own, stopped and started
// again on the same port under the running service; the machine's shared PostgreSQL is never touched.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, type RunningDatabase } from '../../prisma/embedded.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { registerClient, tokenRequest, type RegisteredClient } from '../helpers/oauth.ts';
import { waitFor } from '../helpers/wait.ts';

let dir: string;
let database: RunningDatabase | undefined;
let port: number;
let server: TestServer | undefined;
let admin: Client;
let session: string;
let machine: RegisteredClient;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'tessera-restart-pg-'));
  database = await startEmbeddedPostgres(dir, () => {});
  port = Number(new URL(database.url).port);
  server = await startTestServer({ databaseUrl: database.url, poolSize: 2 });
  const signedIn = await signIn(server.url, ADMIN.email, ADMIN.password);
  admin = signedIn.api;
  session = signedIn.login.token;
  const me = await admin.get('/api/v1/users/me');
  const org = (await admin.get('/api/v1/orgs')).body;
  expect(me.status).toBe(200);
  machine = await registerClient(admin, {
    name: 'Machine',
    grant_types: ['client_credentials'],
    allowed_scopes: ['openid'],
    organization_id: (org.organizations ?? org)[0].id,
  });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await database?.stop();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

/** One request on each interface: REST with a session, GraphQL, the token endpoint, and a request without credentials. */
const probes = () => ({
  rest: () => admin.get('/api/v1/users/me'),
  graphql: () => admin.post('/graphql', { query: '{ me { id } }' }),
  token: () =>
    tokenRequest(server!.url, {
      grant_type: 'client_credentials',
      client_id: machine.client_id,
      client_secret: machine.client_secret,
    }),
  login: () => client(server!.url).post('/api/v1/auth/login', ADMIN),
  portal: () =>
    fetch(`${server!.url}/portal/oauth-clients`, {
      redirect: 'manual',
      headers: { cookie: `tessera_session=${session}` },
    }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.text() })),
});

describe('PostgreSQL stops and starts again under the running service', () => {
  it('answers 503 with Retry-After while it is down, and 200 again once it is back, without a restart', async () => {
    for (const [name, probe] of Object.entries(probes())) expect((await probe()).status, name).toBeLessThan(400);

    await database!.stop();
    database = undefined;
    for (const [name, probe] of Object.entries(probes())) {
      const reply = await probe();
      expect(reply.status, `${name}: ${JSON.stringify(reply.body).slice(0, 300)}`).toBe(503);
      expect(Number(reply.headers.get('retry-after')), name).toBeGreaterThan(0);
    }

    database = await startEmbeddedPostgres(dir, () => {}, { port });
    await waitFor(async () => ((await admin.get('/api/v1/users/me')).status === 200 ? true : undefined), 30_000);
    for (const [name, probe] of Object.entries(probes())) expect((await probe()).status, name).toBeLessThan(400);
  }, 120_000);
});
