// Several processes on one PostgreSQL (README "Several processes on one PostgreSQL", docs/architecture.md#configuration-and-processes):
// two ROLE=api processes and one ROLE=worker run as child processes on one database with one SECRET_KEY and one
// BASE_URL, the way an operator runs them behind a load balancer. Nothing a caller relies on lives in one process:
// a code or refresh token issued by one API is redeemed (or caught replayed) at the other, an API key's limit holds
// across both, a key rotation reaches both without a token failing, the worker delivers every committed event once,
// and one API dying, or both restarting in turn under load, fails no request sent to a node that is up.
import { execFile } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import {
  authorize,
  codeFrom,
  registerClient,
  sessionOf,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';
import { ADMIN } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import {
  cleanEnv,
  deploymentEnv,
  freePort,
  nodeReady,
  ROOT,
  serviceNode,
  signalNode,
  startNode,
  type ServiceNode,
} from './process.ts';

const run = promisify(execFile);
const SECRET_KEY = randomBytes(32).toString('hex');
/** The one public origin every process is given (the load balancer's); the tests reach each process on its port. */
const BASE_URL = 'http://id.tessera.test';
const REDIRECT = 'https://app.example.test/callback';
/** An API key's limit a minute: the interface's default (RATE_LIMIT_API_KEY_PER_MINUTE is not set below). */
const KEY_LIMIT = 100;

let database: TestDatabase;
let dataDir: string;
let ca: TestCa;
let receiver: HttpsReceiver;
let a: ServiceNode;
let b: ServiceNode;
let worker: ServiceNode;
let platform: Client;
let tenant: Tenant;
let app: RegisteredClient;
/** A portal session of tenant.member (made at A), sent as the browser's cookie to either API. */
let session: string;

/** Starts `n` on this file's database, with one SECRET_KEY and BASE_URL for all. */
function start(n: ServiceNode): void {
  startNode(
    n,
    deploymentEnv({ databaseUrl: database.url, secretKey: SECRET_KEY, baseUrl: BASE_URL, dataDir, caFile: ca.caFile }),
  );
}

const ok = (status: number) => status >= 200 && status < 300;

/** A code for `app` from the authorization endpoint of `at`, as the browser holding `session`. */
async function codeAt(at: ServiceNode): Promise<string> {
  return codeFrom(
    await authorize(at.url, session, {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid profile',
      state: randomBytes(4).toString('hex'),
      nonce: 'n',
    }),
  );
}

const exchangeAt = (at: ServiceNode, code: string) =>
  tokenRequest(at.url, {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT,
    client_id: app.client_id,
    client_secret: app.client_secret,
  });
const refreshAt = (at: ServiceNode, refreshToken: string) =>
  tokenRequest(at.url, {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: app.client_id,
    client_secret: app.client_secret,
  });
const userinfoAt = (at: ServiceNode, accessToken: string) =>
  client(at.url, { token: accessToken }).get('/oauth/userinfo');

/** Tokens for `app` through the code flow: authorized at `from`, exchanged at `to`. */
async function tokensVia(
  from: ServiceNode,
  to: ServiceNode,
): Promise<{ access_token: string; refresh_token: string; id_token: string }> {
  const reply = await exchangeAt(to, await codeAt(from));
  if (reply.status !== 200)
    throw new Error(`exchange at ${to.name} failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

const jwksAt = async (at: ServiceNode): Promise<JSONWebKeySet> =>
  (await fetch(`${at.url}/.well-known/jwks.json`)).json() as Promise<JSONWebKeySet>;

/** `token` verifies at `at`: its signature against the key set `at` publishes, and the token accepted by `at`'s userinfo. */
async function expectVerifiedAt(at: ServiceNode, accessToken: string): Promise<void> {
  await expect(
    jwtVerify(accessToken, createLocalJWKSet(await jwksAt(at)), { issuer: BASE_URL }),
    `signature at ${at.name}`,
  ).resolves.toBeTruthy();
  const info = await userinfoAt(at, accessToken);
  expect(info.status, `userinfo at ${at.name}: ${JSON.stringify(info.body)}`).toBe(200);
}

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-several-'));
  ca = makeTestCa(['localhost']);
  receiver = await startHttpsReceiver(ca, 200);
  a = serviceNode('A', 'api', await freePort());
  b = serviceNode('B', 'api', await freePort());
  worker = serviceNode('worker', 'worker');
  // All three at once on the empty database, as a deployment starts: migrations, the bootstrap and the first signing
  // keys are each made once between them.
  for (const n of [a, b, worker]) start(n);
  await nodeReady(a);
  await nodeReady(b);

  platform = (await signIn(a.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(b.url, platform);
  app = await registerClient(platform, {
    name: 'Relying party',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'profile', 'email'],
    consent_required: false,
    organization_id: tenant.id,
  });
  session = await sessionOf(a.url, tenant.member);
}, 90_000);

afterAll(async () => {
  for (const n of [a, b, worker]) {
    if (n?.child?.pid && n.child.exitCode === null && n.child.signalCode === null) {
      try {
        process.kill(-n.child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  await Promise.all([a, b, worker].flatMap((n) => (n?.exited ? [n.exited] : [])));
  await receiver?.close();
  ca?.remove();
  await database?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('two API processes and a worker on one PostgreSQL', () => {
  it('redeem at one API the code the other issued, once', async () => {
    // given a code issued by A to the signed-in member
    const code = await codeAt(a);
    // when the client exchanges it at B
    const tokens = await exchangeAt(b, code);
    // then B issues the tokens, and both APIs accept them
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    await jwtVerify(tokens.body.id_token, createLocalJWKSet(await jwksAt(b)), {
      issuer: BASE_URL,
      audience: app.client_id,
    });
    for (const at of [a, b]) expect((await userinfoAt(at, tokens.body.access_token)).body.sub).toBe(tenant.member.id);
    // and the code is spent for A too: a replay there is refused and ends what B issued
    const replay = await exchangeAt(a, code);
    expect([replay.status, replay.body.error]).toEqual([400, 'invalid_grant']);
    for (const at of [a, b]) expect((await userinfoAt(at, tokens.body.access_token)).status).toBe(401);
  });

  it('catch a refresh token reused at the other API, and end its whole family', async () => {
    // given tokens, refreshed once at A
    const first = await tokensVia(a, a);
    const second = await refreshAt(a, first.refresh_token);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    // when the replaced refresh token is presented at B
    const reuse = await refreshAt(b, first.refresh_token);
    // then B refuses it, and the grant has ended everywhere: the new refresh token and every access token fail
    expect([reuse.status, reuse.body.error]).toEqual([400, 'invalid_grant']);
    for (const at of [a, b]) {
      const next = await refreshAt(at, second.body.refresh_token);
      expect([next.status, next.body.error], at.name).toEqual([400, 'invalid_grant']);
      expect((await userinfoAt(at, second.body.access_token)).status, at.name).toBe(401);
    }
  });

  it("hold an API key's limit across both: exactly the limit succeeds in the window, the rest is 429", async () => {
    // given an API key of the tenant (each process leases blocks of its requests from the one shared counter)
    const created = await tenant.admin.api.post('/api/v1/api-keys', { name: 'spread over two nodes' });
    expect(created.status).toBe(201);
    const credentials = { apiKey: { key: created.body.key, secret: created.body.secret } };
    // when twice the limit is sent, alternating between A and B, well inside the minute
    const replies = [];
    for (let i = 0; i < 2 * KEY_LIMIT; i++) {
      const at = i % 2 === 0 ? a : b;
      replies.push({ at: at.name, reply: await client(at.url, credentials).get('/api/v1/orgs') });
    }
    // then exactly the limit succeeds: no block goes past it, and every request leased is used by the node that
    // leased it (each keeps getting requests); every other answer is 429 with Retry-After
    const statuses = replies.map((r) => r.reply.status);
    expect(statuses.filter((s) => s === 200).length, statuses.join(' ')).toBe(KEY_LIMIT);
    expect(statuses.filter((s) => s === 429).length, statuses.join(' ')).toBe(KEY_LIMIT);
    // both nodes served part of it
    expect(new Set(replies.filter((r) => r.reply.status === 200).map((r) => r.at))).toEqual(new Set(['A', 'B']));
    for (const { reply } of replies.filter((r) => r.reply.status === 429)) {
      expect(reply.body.error_description).toBe(`Rate limit exceeded: ${KEY_LIMIT} requests a minute per API key`);
      expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // Each node's RateLimit-Remaining falls with every request it serves: a new block is counted from the row, with
    // what the other node has leased by then as spent.
    for (const name of ['A', 'B']) {
      const remaining = replies
        .filter((r) => r.at === name && r.reply.status === 200)
        .map((r) => Number(r.reply.headers.get('ratelimit-remaining')));
      expect(remaining, name).toEqual([...remaining].sort((x, y) => y - x));
      expect(new Set(remaining).size, name).toBe(remaining.length);
    }
  });

  it('deliver every committed event once, whichever API made the change', async () => {
    // given a webhook of the tenant to a real HTTPS receiver, created at A
    const created = await tenant.admin.api.post('/api/v1/webhooks', {
      url: receiver.url('localhost'),
      events: ['organization.updated'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const secret: string = created.body.secret;
    // when N changes are made, half through A and half through B, two at a time
    const N = 20;
    const names: string[] = [];
    for (let i = 0; i < N; i += 2) {
      const pair = [a, b].map((at, j) => {
        const name = `Renamed ${i + j} ${randomBytes(2).toString('hex')}`;
        names.push(name);
        return client(at.url, { token: tenant.admin.token }).patch(`/v1/organizations/${tenant.id}`, { name });
      });
      for (const reply of await Promise.all(pair)) expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    }
    // then the worker delivers N events, each signed with the webhook's secret, each event once: once Tessera has
    // recorded N deliveries delivered and its queue holds no delivery job (a job running is still in it), nothing
    // more can be sent
    const queued = async () => {
      const db = new pg.Client({ connectionString: database.url });
      await db.connect();
      try {
        return (
          await db.query(
            `select count(*)::int as n from graphile_worker.jobs where task_identifier = 'webhook_deliver'`,
          )
        ).rows[0].n as number;
      } finally {
        await db.end();
      }
    };
    await waitFor(async () => {
      const recorded = (await tenant.admin.api.get(`/api/v1/webhooks/${created.body.id}/deliveries?limit=100`)).body
        .deliveries as { status: string }[];
      return recorded.length === N && recorded.every((d) => d.status === 'delivered') && (await queued()) === 0
        ? true
        : undefined;
    }, 20_000);
    const events = receiver.received.map(
      (r) => JSON.parse(r.body) as { id: string; event: string; data: { organization: { name: string } } },
    );
    expect(receiver.received.length).toBe(N);
    expect(new Set(events.map((e) => e.id)).size).toBe(N);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(N);
    expect(events.map((e) => e.event)).toEqual(Array(N).fill('organization.updated'));
    expect(events.map((e) => e.data.organization.name).sort()).toEqual([...names].sort());
    for (const r of receiver.received) {
      expect(r.headers['x-service-signature']).toBe(
        `sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`,
      );
    }
    // and Tessera's record agrees: N deliveries, each delivered at its first attempt
    const deliveries = await tenant.admin.api.get(`/api/v1/webhooks/${created.body.id}/deliveries?limit=100`);
    expect(
      deliveries.body.deliveries.map((d: { status: string; attemptCount: number }) => [d.status, d.attemptCount]),
    ).toEqual(Array(N).fill(['delivered', 1]));
  });

  it('publish a key rotation at both APIs without a token failing, before, during or after', async () => {
    // given tokens issued by each API before the rotation
    const before = [await tokensVia(a, a), await tokensVia(b, b)];
    const oldKids = new Set((await jwksAt(a)).keys.map((k) => k.kid));
    // when `npm run keys:rotate` runs against the database
    const env = { ...cleanEnv(), DATABASE_URL: database.url, SECRET_KEY, LOG_LEVEL: 'silent' };
    const { stdout } = await run('npm', ['run', '--silent', 'keys:rotate'], { cwd: ROOT, env });
    const newKids = /new signing keys: ([\w-]+), ([\w-]+), ([\w-]+)/.exec(stdout)?.slice(1);
    expect(newKids, stdout).toHaveLength(3);
    // A new key signs two minutes after it is made, once every process has had a refresh to publish it. The test
    // does not wait that long: the keys' creation is moved two minutes back before any process has loaded them.
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      await db.query(`update signing_keys set created_at = created_at - interval '2 minutes' where kid = any($1)`, [
        newKids,
      ]);
    } finally {
      await db.end();
    }

    // then, until each API has reloaded its keys (within a minute of its last load), every token issued at either
    // verifies at both: a token signed with a new key by the API that reloaded first makes the other reload for its kid
    let rounds = 0;
    await waitFor(async () => {
      const [from, other] = rounds++ % 2 === 0 ? [a, b] : [b, a];
      const tokens = await tokensVia(from, from);
      for (const at of [from, other]) {
        const info = await userinfoAt(at, tokens.access_token);
        if (info.status !== 200)
          throw new Error(
            `a token of ${from.name} failed at ${at.name} during the rotation: ${info.status} ${JSON.stringify(info.body)}`,
          );
      }
      const published = await Promise.all([a, b].map(async (at) => new Set((await jwksAt(at)).keys.map((k) => k.kid))));
      return published.every((kids) => newKids!.every((kid) => kids.has(kid))) ? true : undefined;
    }, 75_000);
    // JWKS at both lists the new keys and still the previous ones
    for (const at of [a, b]) {
      const kids = (await jwksAt(at)).keys.map((k) => k.kid);
      expect(kids, at.name).toEqual(expect.arrayContaining([...newKids!, ...oldKids]));
    }
    // tokens issued before the rotation verify at both
    for (const tokens of before) for (const at of [a, b]) await expectVerifiedAt(at, tokens.access_token);
    // new tokens are signed with the new RS256 key, by both, and verify at both
    for (const from of [a, b]) {
      const tokens = await tokensVia(from, from);
      expect(newKids).toContain(decodeProtectedHeader(tokens.access_token).kid);
      for (const at of [a, b]) await expectVerifiedAt(at, tokens.access_token);
    }
  });

  it('keep answering at B while A is killed, and carry on there what A began', async () => {
    // given requests running against B, and a code A has issued
    const code = await codeAt(a);
    const replies: number[] = [];
    const errors: unknown[] = [];
    let running = true;
    const loop = async () => {
      while (running) {
        await client(b.url, { token: session })
          .get('/api/v1/users/me')
          .then(
            (r) => replies.push(r.status),
            (e: unknown) => errors.push(e),
          );
      }
    };
    const loops = [loop(), loop()];
    try {
      await waitFor(() => (replies.length >= 10 ? true : undefined));
      // when A is killed outright
      const killedAt = replies.length;
      await signalNode(a, 'SIGKILL');
      await expect(fetch(`${a.url}/healthz`)).rejects.toThrow();
      await waitFor(() => (replies.length >= killedAt + 20 ? true : undefined));
    } finally {
      running = false;
      await Promise.all(loops);
    }
    // then B answered every request, during and after
    expect(errors).toEqual([]);
    expect(replies.every((s) => s === 200)).toBe(true);
    // and the code A issued is redeemed at B
    const tokens = await exchangeAt(b, code);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    // A starts again on its port
    start(a);
    await nodeReady(a);
    expect((await userinfoAt(a, tokens.body.access_token)).status).toBe(200);
  });

  it('fail no request through a rolling restart under steady load', async () => {
    if (a.child?.exitCode !== null || a.child?.signalCode !== null) {
      start(a);
      await nodeReady(a);
    }
    const tokens = await tokensVia(a, b);
    // A load balancer as small as can be: round-robin over the nodes its health checks mark up. A node taken out of
    // rotation gets no new request; those it has in flight are its own to finish (SIGTERM lets them).
    const up = new Set<ServiceNode>([a, b]);
    let next = 0;
    const outcomes: { node: string; status?: number; error?: string }[] = [];
    const requests: { path: string; token: string }[] = [
      { path: '/api/v1/users/me', token: session },
      { path: '/oauth/userinfo', token: tokens.access_token },
      { path: '/api/v1/orgs', token: session },
    ];
    async function send(request: { path: string; token: string }): Promise<void> {
      const nodes = [a, b].filter((n) => up.has(n));
      const target = nodes[next++ % nodes.length]!;
      try {
        const res = await fetch(`${target.url}${request.path}`, {
          headers: { authorization: `Bearer ${request.token}` },
        });
        await res.arrayBuffer();
        outcomes.push({ node: target.name, status: res.status });
      } catch (error) {
        outcomes.push({ node: target.name, error: String((error as Error).cause ?? error) });
      }
    }
    let running = true;
    const load = Array.from({ length: 4 }, async (_, i) => {
      for (let k = i; running; k++) await send(requests[k % requests.length]!);
    });
    const servedBy = (name: string) => outcomes.filter((o) => o.node === name).length;

    // when each node in turn is taken out of rotation, stopped with SIGTERM at once, started again and put back once
    // /readyz answers
    try {
      await waitFor(() => (outcomes.length >= 40 ? true : undefined));
      for (const n of [a, b]) {
        up.delete(n);
        expect(await signalNode(n, 'SIGTERM'), `${n.name} stops cleanly`).toBe(0);
        start(n);
        await nodeReady(n);
        const servedBefore = servedBy(n.name);
        up.add(n);
        await waitFor(() => (servedBy(n.name) >= servedBefore + 20 ? true : undefined));
      }
    } finally {
      running = false;
      await Promise.all(load);
    }

    // then every request succeeded, at both nodes
    const failed = outcomes.filter((o) => o.error !== undefined || !ok(o.status!));
    expect(failed, JSON.stringify(failed.slice(0, 5))).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(100);
    expect(servedBy('A')).toBeGreaterThan(20);
    expect(servedBy('B')).toBeGreaterThan(20);
  });
});
