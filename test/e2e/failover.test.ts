// Failover without loss (README "High availability", docs/architecture.md#high-availability): two ROLE=api and one
// ROLE=worker on PostgreSQL under Patroni with synchronous replication, reached through HAProxy (test/e2e/patroni.ts).
// Under steady load of code exchanges, refreshes, sign-ins and API writes that emit events and mail, the primary is
// killed. Every request answered 2xx before, during or after the switch still holds afterwards: each refresh token
// issued works once, each write's event is delivered, each invitation's mail is sent. No request is answered 500:
// one that fails during the switch is 503 with Retry-After. Within 30 s of the kill the service is whole again,
// with no process restarted by hand.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { client, signIn, type Reply } from '../helpers/http.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver } from '../helpers/https-receiver.ts';
import {
  authorize,
  codeFrom,
  registerClient,
  sessionOf,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';
import { ADMIN } from '../helpers/server.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { waitFor } from '../helpers/wait.ts';
import { startCluster, type Cluster } from './patroni.ts';
import { deploymentEnv, freePort, nodeReady, serviceNode, signalNode, startNode, type ServiceNode } from './process.ts';

const SECRET_KEY = randomBytes(32).toString('hex');
const BASE_URL = 'http://id.tessera.test';
const REDIRECT = 'https://app.example.test/callback';
const DATABASE = 'tessera';
/** The most a request may wait for a connection: short, so that a request during the switch is answered soon. */
const POOL_TIMEOUT_S = 5;

let cluster: Cluster;
let dataDir: string;
let receiver: HttpsReceiver;
let smtp: TestSmtp;
let nodes: ServiceNode[];
let apis: ServiceNode[];
let tenant: Tenant;
let app: RegisteredClient;
let session: string;

beforeAll(async () => {
  cluster = await startCluster();
  const admin = new pg.Client({ connectionString: cluster.url('postgres') });
  admin.on('error', () => {});
  await admin.connect();
  await admin.query(`create database ${DATABASE}`);
  await admin.end();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-failover-'));
  const ca = makeTestCa(['localhost']);
  receiver = await startHttpsReceiver(ca, 200);
  smtp = await startTestSmtp();
  apis = [serviceNode('A', 'api', await freePort()), serviceNode('B', 'api', await freePort())];
  nodes = [...apis, serviceNode('worker', 'worker')];
  const databaseUrl = new URL(cluster.url(DATABASE));
  databaseUrl.searchParams.set('pool_timeout', String(POOL_TIMEOUT_S));
  for (const n of nodes)
    startNode(n, {
      ...deploymentEnv({
        databaseUrl: databaseUrl.toString(),
        secretKey: SECRET_KEY,
        baseUrl: BASE_URL,
        dataDir,
        caFile: ca.caFile,
      }),
      RATE_LIMIT_API_KEY_PER_MINUTE: '1000000',
      SMTP_URL: smtp.url,
    });
  for (const n of apis) await nodeReady(n, 60_000);
  const platform = (await signIn(apis[0]!.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(apis[1]!.url, platform);
  app = await registerClient(platform, {
    name: 'Failover relying party',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'offline_access'],
    consent_required: false,
    organization_id: tenant.id,
  });
  session = await sessionOf(apis[0]!.url, tenant.member);
  const webhook = await tenant.admin.api.post('/api/v1/webhooks', {
    url: receiver.url('localhost'),
    events: ['organization.updated'],
  });
  if (webhook.status !== 201) throw new Error(`webhook: ${webhook.status} ${JSON.stringify(webhook.body)}`);
}, 240_000);

afterAll(async () => {
  for (const n of nodes ?? []) if (n.child && n.child.exitCode === null) await signalNode(n, 'SIGKILL');
  await receiver?.close();
  await smtp?.close();
  await cluster?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** What one kind of request answered, and when. */
interface Answer {
  kind: string;
  status: number;
  retryAfter: string | null;
  at: number;
  body: unknown;
}

describe('a failover of the primary under load', () => {
  it('loses nothing committed, answers no 500, and is whole again within 30 s', async () => {
    const answers: Answer[] = [];
    /** Refresh tokens answered 200 and not yet spent by the load. */
    const unspent = new Set<string>();
    const renamed: string[] = [];
    const invited: string[] = [];
    let stop = false;
    let n = 0;
    const at = () => apis[n++ % apis.length]!.url;

    const record = (kind: string, reply: Reply) => {
      answers.push({
        kind,
        status: reply.status,
        retryAfter: reply.headers.get('retry-after'),
        at: Date.now(),
        body: reply.body,
      });
      return reply.status >= 200 && reply.status < 300;
    };
    const codeFlow = async () => {
      const back = await authorize(at(), session, {
        client_id: app.client_id,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: 'openid offline_access',
        nonce: 'n',
      }).catch((error: Error) => error);
      if (back instanceof Error) {
        // authorize() throws on anything but a 302: read the status it names.
        const status = Number(/answered (\d{3})/.exec(back.message)?.[1] ?? 0);
        answers.push({
          kind: 'authorize',
          status,
          retryAfter: status === 503 ? '?' : null,
          at: Date.now(),
          body: back.message,
        });
        return;
      }
      const exchange = await tokenRequest(at(), {
        grant_type: 'authorization_code',
        code: codeFrom(back),
        redirect_uri: REDIRECT,
        client_id: app.client_id,
        client_secret: app.client_secret,
      });
      if (record('exchange', exchange)) unspent.add(exchange.body.refresh_token as string);
    };
    const refresh = async () => {
      const token = unspent.values().next().value;
      if (!token) return codeFlow();
      unspent.delete(token);
      const reply = await tokenRequest(at(), {
        grant_type: 'refresh_token',
        refresh_token: token,
        client_id: app.client_id,
        client_secret: app.client_secret,
      });
      if (record('refresh', reply)) unspent.add(reply.body.refresh_token as string);
    };
    const signInOnce = async () => {
      record(
        'sign-in',
        await client(at()).post('/api/v1/auth/login', {
          email: tenant.member.email,
          password: 'a long enough password',
        }),
      );
    };
    const rename = async () => {
      const name = `Failover ${randomBytes(4).toString('hex')}`;
      if (
        record(
          'rename',
          await client(at(), { token: tenant.admin.token }).patch(`/v1/organizations/${tenant.id}`, { name }),
        )
      )
        renamed.push(name);
    };
    const invite = async () => {
      const email = `invitee-${randomBytes(4).toString('hex')}@example.test`;
      const reply = await client(at(), { token: tenant.admin.token }).post(
        `/v1/organizations/${tenant.id}/invitations`,
        {
          email,
          role: 'member',
        },
      );
      if (record('invite', reply)) invited.push(email);
    };
    const loop = async (step: () => Promise<void>) => {
      while (!stop) {
        await step();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };

    const running = Promise.all([codeFlow, refresh, refresh, signInOnce, rename, invite].map(loop));
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const primary = await cluster.primary();
    expect(primary, cluster.output()).toBeDefined();
    const killedAt = Date.now();
    await cluster.kill(primary!);
    // Whole again: every kind of request answered 2xx after the last one that was not.
    let wholeAt = 0;
    await waitFor(() => {
      const since = answers.filter((a) => a.at > killedAt);
      const lastFailure = Math.max(killedAt, ...since.filter((a) => a.status >= 300).map((a) => a.at));
      const kinds = new Set(since.filter((a) => a.at > lastFailure && a.status < 300).map((a) => a.kind));
      if (
        ['exchange', 'refresh', 'sign-in', 'rename', 'invite'].every((k) => kinds.has(k)) &&
        Date.now() - lastFailure > 2_000
      ) {
        wholeAt = lastFailure;
        return true;
      }
      return undefined;
    }, 90_000).catch((error: Error) => {
      stop = true;
      throw new Error(
        `${error.message}: never whole again\n${cluster.output()}\n${nodes.map((x) => x.output.join('\n')).join('\n')}`,
      );
    });
    stop = true;
    await running;
    const newPrimary = await cluster.primary();
    expect(newPrimary?.name, cluster.output()).not.toBe(primary!.name);

    // No 500: anything but a 2xx was a 503 with Retry-After.
    const failed = answers.filter((a) => a.status >= 300);
    expect(
      failed
        .filter((a) => a.status !== 503 || !a.retryAfter)
        .map((a) => `${a.kind} ${a.status} ${JSON.stringify(a.body)}`),
      apis.map((x) => x.output.filter((line) => line.includes('"level":50')).join('\n')).join('\n'),
    ).toEqual([]);
    const recovery = (wholeAt - killedAt) / 1000;
    console.log(
      `failover: ${answers.length} requests, ${failed.length} answered 503 during the switch; whole again ${recovery.toFixed(1)} s after the kill`,
    );
    expect(recovery).toBeLessThanOrEqual(30);

    // Every refresh token answered 200 and not spent works once, at either API.
    const tokens = [...unspent];
    expect(tokens.length).toBeGreaterThan(0);
    for (const [i, token] of tokens.entries()) {
      const params = {
        grant_type: 'refresh_token',
        refresh_token: token,
        client_id: app.client_id,
        client_secret: app.client_secret,
      };
      const first = await tokenRequest(apis[i % 2]!.url, params);
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      const again = await tokenRequest(apis[(i + 1) % 2]!.url, params);
      expect(again.status).toBe(400);
    }
    // Every rename answered 200 reached the receiver as an event, and every invitation's mail was sent.
    const undelivered = () => {
      const delivered = new Set(
        receiver.received.map(
          (r) => (JSON.parse(r.body) as { data: { organization: { name: string } } }).data.organization.name,
        ),
      );
      return renamed.filter((name) => !delivered.has(name));
    };
    const unmailed = () => {
      const mailed = new Set(smtp.received.map((m) => m.to));
      return invited.filter((email) => !mailed.has(email));
    };
    await waitFor(() => (undelivered().length + unmailed().length === 0 ? true : undefined), 60_000).catch(
      async (error: Error) => {
        const check = new pg.Client({ connectionString: cluster.url(DATABASE) });
        await check.connect();
        const { rows } = await check.query(
          'select task_identifier, attempts, locked_at, locked_by, last_error, run_at from graphile_worker.jobs',
        );
        await check.end();
        throw new Error(
          `${error.message}: ${undelivered().length} of ${renamed.length} events undelivered, ${unmailed().length} of ${invited.length} mails unsent; jobs ${JSON.stringify(rows)}\n${nodes[2]!.output.join('\n')}`,
        );
      },
    );
    expect(renamed.length).toBeGreaterThan(0);
    expect(invited.length).toBeGreaterThan(0);
  }, 300_000);
});
