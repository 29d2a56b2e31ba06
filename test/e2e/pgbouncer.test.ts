// Behind PgBouncer in transaction mode (README "Behind a connection pooler",
// docs/architecture.md#behind-a-connection-pooler): Debian's PgBouncer 1.18 keeps no prepared statement across
// transactions, so the service runs with DATABASE_PREPARED_STATEMENTS=false through it, and the worker (LISTEN) and
// the migrations (an advisory lock) take WORKER_DATABASE_URL straight to PostgreSQL. 100 clients share the pooler's
// 10 server connections on the token, userinfo, sign-in and webhook paths, and nothing fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import {
  authorize,
  codeFrom,
  exchangeCode,
  registerClient,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { freePort } from './process.ts';

const PGBOUNCER = '/usr/sbin/pgbouncer';
const SERVER_CONNECTIONS = 10;
const CLIENTS = 100;
const REDIRECT = 'https://app.example.test/callback';

interface Pooler {
  url: (database: string) => string;
  stop(): Promise<void>;
  /** What PgBouncer printed: shown when it does not start. */
  output: string[];
}

/** PgBouncer in transaction mode in front of `direct`'s server, as the user PostgreSQL trusts. */
async function startPgBouncer(direct: URL): Promise<Pooler> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tessera-pgbouncer-'));
  // PgBouncer refuses to run as root: it drops to `postgres`, which must read its files.
  await chmod(dir, 0o755);
  const port = await freePort();
  const user = decodeURIComponent(direct.username) || 'postgres';
  await writeFile(path.join(dir, 'users.txt'), `"${user}" ""\n`);
  await writeFile(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${direct.hostname} port=${direct.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${SERVER_CONNECTIONS}`,
      'reserve_pool_size = 0',
      'max_client_conn = 500',
      // node-postgres sends no startup options PgBouncer must know, but a client of another library may.
      'ignore_startup_parameters = extra_float_digits,options',
      'server_reset_query =',
      'admin_users = ' + user,
      '',
    ].join('\n'),
  );
  const output: string[] = [];
  const child: ChildProcess = spawn(PGBOUNCER, ['-u', 'postgres', path.join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) stream?.on('data', (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(async () => {
    const probe = new pg.Client({ connectionString: `postgresql://${user}@127.0.0.1:${port}/pgbouncer` });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.end();
      return true;
    } catch {
      return undefined;
    }
  }, 20_000).catch((error: Error) => {
    throw new Error(`PgBouncer did not start (${error.message}): ${output.join('')}`);
  });
  return {
    url: (database) => `postgresql://${user}@127.0.0.1:${port}/${database}`,
    output,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

let database: TestDatabase;
let pooler: Pooler;
let ca: TestCa;
let receiver: HttpsReceiver;
let server: TestServer;
let platform: Client;
let tenant: Tenant;
let app: RegisteredClient;

/** How many server connections PgBouncer has opened to PostgreSQL, by its admin console's SHOW SERVERS. */
async function pooledServerConnections(): Promise<number> {
  const admin = new pg.Client({ connectionString: pooler.url('pgbouncer') });
  await admin.connect();
  try {
    return (await admin.query('SHOW SERVERS')).rows.length;
  } finally {
    await admin.end();
  }
}

beforeAll(async () => {
  database = await createTestDatabase();
  const direct = new URL(database.url);
  pooler = await startPgBouncer(direct);
  ca = makeTestCa(['localhost']);
  receiver = await startHttpsReceiver(ca, 200);
  const pooled = new URL(pooler.url(direct.pathname.slice(1)));
  pooled.searchParams.set('connection_limit', String(CLIENTS));
  server = await startTestServer({
    databaseUrl: database.url,
    role: 'all',
    env: {
      DATABASE_URL: pooled.toString(),
      DATABASE_PREPARED_STATEMENTS: 'false',
      WORKER_DATABASE_URL: database.url,
      WEBHOOK_CA_FILE: ca.caFile,
    },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, platform);
  app = await registerClient(platform, {
    name: 'Pooled relying party',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email', 'offline_access'],
    consent_required: false,
    organization_id: tenant.id,
  });
});

afterAll(async () => {
  await server?.stop();
  await receiver?.close();
  await pooler?.stop();
  await database?.drop();
});

/** `n` calls of `one` at once; every answer. */
const atOnce = <T>(n: number, one: (i: number) => Promise<T>) =>
  Promise.all(Array.from({ length: n }, (_, i) => one(i)));

describe('behind PgBouncer in transaction mode, 100 clients on 10 server connections', () => {
  it('signs people in, issues and redeems codes, refreshes, answers userinfo, and never fails', async () => {
    const signIns = await atOnce(CLIENTS, () =>
      client(server.url).post('/api/v1/auth/login', { email: tenant.member.email, password: PASSWORD }),
    );
    expect(signIns.map((r) => r.status)).toEqual(Array(CLIENTS).fill(200));
    const sessions = signIns.map((r) => r.body.token as string);

    const tokens = await atOnce(CLIENTS, async (i) => {
      const code = codeFrom(
        await authorize(server.url, sessions[i]!, {
          client_id: app.client_id,
          redirect_uri: REDIRECT,
          response_type: 'code',
          scope: 'openid email offline_access',
          nonce: `n${i}`,
        }),
      );
      return exchangeCode(server.url, app, code, REDIRECT);
    });
    expect(tokens.map((r) => r.status)).toEqual(Array(CLIENTS).fill(200));

    const refreshed = await atOnce(CLIENTS, (i) =>
      tokenRequest(server.url, {
        grant_type: 'refresh_token',
        refresh_token: tokens[i]!.body.refresh_token,
        client_id: app.client_id,
        client_secret: app.client_secret,
      }),
    );
    expect(refreshed.map((r) => r.status)).toEqual(Array(CLIENTS).fill(200));

    const infos = await atOnce(CLIENTS, (i) =>
      client(server.url, { token: refreshed[i]!.body.access_token }).get('/oauth/userinfo'),
    );
    expect(infos.map((r) => r.status)).toEqual(Array(CLIENTS).fill(200));
    expect(new Set(infos.map((r) => r.body.email))).toEqual(new Set([tenant.member.email]));

    // All of it on the pooler's ten server connections (the worker's own come straight, not through it).
    const servers = await pooledServerConnections();
    expect(servers).toBeGreaterThan(0);
    expect(servers).toBeLessThanOrEqual(SERVER_CONNECTIONS);
  });

  it('delivers the events of API writes made through the pooler, each once, signed', async () => {
    const created = await tenant.admin.api.post('/api/v1/webhooks', {
      url: receiver.url('localhost'),
      events: ['organization.updated'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const secret = String(created.body.secret);
    const N = 20;
    const writes = await atOnce(N, (i) =>
      client(server.url, { token: tenant.admin.token }).patch(`/v1/organizations/${tenant.id}`, {
        name: `Pooled ${i}`,
      }),
    );
    expect(writes.map((r) => r.status)).toEqual(Array(N).fill(200));
    await waitFor(() => (receiver.received.length >= N ? true : undefined), 60_000);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(N);
    const names = receiver.received.map(
      (r) => (JSON.parse(r.body) as { data: { organization: { name: string } } }).data.organization.name,
    );
    expect(names.sort()).toEqual(Array.from({ length: N }, (_, i) => `Pooled ${i}`).sort());
    for (const r of receiver.received) {
      expect(r.headers['x-service-signature']).toBe(
        `sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`,
      );
    }
  });
});

describe('behind PgBouncer in transaction mode with prepared statements on (the control)', () => {
  it('fails statements whose name was prepared on another server connection: the setting is what makes it work', async () => {
    const pooled = pooler.url(new URL(database.url).pathname.slice(1));
    const pool = new pg.Pool({ connectionString: pooled, max: 20 });
    pool.on('error', () => {});
    try {
      const named = (i: number) =>
        pool.query({ name: 'tessera_probe', text: 'select $1::int + 1 as n', values: [i] }).then(
          () => 'ok',
          (error: Error) => error.message,
        );
      const answers = await atOnce(200, named);
      expect(answers.some((a) => a !== 'ok' && /prepared statement/.test(a))).toBe(true);
    } finally {
      await pool.end();
    }
  });
});
