// `npm run bench:memory`: the resident memory of a process of each role (docs/architecture.md#configuration-and-processes),
// at rest and after load, as `node server/main.ts` runs (README, Sizing). Each role gets a fresh database of
// BENCH_DATABASE_URL's server (the local server's by default) and is started as a child process:
// - at rest: VmRSS 5 s after it is ready;
// - an API's load (ROLE=api and all): MEMORY_SECONDS (15) each of sign-in flows (authorize with a session and the code
//   exchange), refreshes and userinfo calls, 16 at a time, and 200 password sign-ins (argon2id), 4 at a time;
// - a worker's load (ROLE=worker and all): 5,000 webhook deliveries to an HTTPS receiver on loopback (another
//   process), the events written by this process (emitEvents), the webhook made through an API process beside it;
// - the peak during the load (sampled every 50 ms), right after it, and once more 10 s later.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createDb } from '../../schema/db.ts';
import { emitEvents } from '../../schema/events/emit.ts';
import { makeTestCa } from '../helpers/https-receiver.ts';
import { ADMIN } from '../helpers/server.ts';
import { freePort, nodeReady, serviceNode, signalNode, startNode, type ServiceNode } from '../e2e/process.ts';

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const SECONDS = Number(process.env.MEMORY_SECONDS ?? 15);
const CONCURRENCY = 16;
const DELIVERIES = 5_000;
const SECRET_KEY = randomBytes(32).toString('hex');
const REDIRECT = 'http://127.0.0.1/cb';

// The receiver runs in its own process and answers 200 at once (as test/bench/run.ts's).
const RECEIVER = `const s = require('node:https').createServer({ key: process.env.KEY, cert: process.env.CERT }, (q, r) => {
  q.resume(); q.on('end', () => r.writeHead(200, { 'content-type': 'text/plain' }).end('ok')); });
s.keepAliveTimeout = 60000; s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;

/** VmRSS in MB (thousands of kB), as ../shared/bench reports it. */
const rssMB = async (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1000;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

/** Runs `load` while sampling `pid`'s memory: the peak during it. */
async function peakDuring(pid: number, load: () => Promise<void>): Promise<number> {
  let peak = await rssMB(pid);
  const sampler = setInterval(() => void rssMB(pid).then((mb) => (peak = Math.max(peak, mb))), 50);
  try {
    await load();
  } finally {
    clearInterval(sampler);
  }
  return peak;
}

/** `call` for `seconds`, `concurrency` at a time; throws on the first answer that is not `ok`. */
async function forSeconds(seconds: number, concurrency: number, call: (lane: number) => Promise<Response>) {
  const until = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, lane) => {
      while (performance.now() < until) {
        const res = await call(lane);
        const body = await res.text();
        if (!res.ok && res.status !== 302) throw new Error(`HTTP ${res.status} ${body.slice(0, 200)}`);
        done++;
      }
    }),
  );
  return done;
}

interface Deployment {
  url: URL;
  dataDir: string;
  ca: ReturnType<typeof makeTestCa>;
  nodes: ServiceNode[];
}

async function start(d: Deployment, role: 'api' | 'worker' | 'all'): Promise<ServiceNode> {
  const n = serviceNode(role, role, role === 'worker' ? 0 : await freePort());
  d.nodes.push(n);
  startNode(n, {
    DATABASE_URL: d.url.toString(),
    SECRET_KEY,
    DATA_DIR: d.dataDir,
    HOST: '127.0.0.1',
    BASE_URL: n.url,
    LOG_LEVEL: 'warn',
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    RATE_LIMIT_API_KEY_PER_MINUTE: '100000000',
    RATE_LIMIT_ORGANIZATION_PER_HOUR: '100000000',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_CA_FILE: d.ca.caFile,
  });
  if (n.port) await nodeReady(n, 60_000);
  else await pause(5_000); // a worker has no port: its start is a few seconds
  return n;
}

const json = (body: unknown, token?: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify(body),
});
const form = (p: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(p),
});
async function call<T>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}
const signIn = (base: string) =>
  call<{ token: string }>(`${base}/api/v1/auth/login`, json({ email: ADMIN.email, password: ADMIN.password }));

/** Sign-in flows, refreshes, userinfo and password sign-ins against `base`. */
async function apiLoad(base: string): Promise<void> {
  const { token } = await signIn(base);
  const client = await call<{ client_id: string; client_secret: string }>(
    `${base}/api/v1/oauth-clients`,
    json(
      {
        name: 'memory',
        redirect_uris: [REDIRECT],
        allowed_scopes: ['openid', 'email', 'offline_access'],
        consent_required: false,
      },
      token,
    ),
  );
  const credentials = { client_id: client.client_id, client_secret: client.client_secret };
  const authorizeUrl = `${base}/oauth/authorize?${new URLSearchParams({ client_id: client.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid email offline_access', nonce: 'n' })}`;
  const code = async () => {
    const res = await fetch(authorizeUrl, { redirect: 'manual', headers: { cookie: `tessera_session=${token}` } });
    const location = new URL(res.headers.get('location') ?? 'http://x/');
    const value = location.searchParams.get('code');
    if (!value) throw new Error(`authorize: HTTP ${res.status} ${location.href}`);
    return value;
  };
  const exchange = async () =>
    fetch(
      `${base}/oauth/token`,
      form({ grant_type: 'authorization_code', code: await code(), redirect_uri: REDIRECT, ...credentials }),
    );
  const flows = await forSeconds(SECONDS, CONCURRENCY, exchange);
  const lanes = await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => (await exchange()).json() as Promise<Record<string, string>>),
  );
  const refreshes = await forSeconds(SECONDS, CONCURRENCY, async (lane) => {
    const res = await fetch(
      `${base}/oauth/token`,
      form({ grant_type: 'refresh_token', refresh_token: lanes[lane]!.refresh_token!, ...credentials }),
    );
    const next = (await res.clone().json()) as Record<string, string>;
    if (next.refresh_token) lanes[lane] = next;
    return res;
  });
  const userinfo = await forSeconds(SECONDS, CONCURRENCY, (lane) =>
    fetch(`${base}/oauth/userinfo`, { headers: { authorization: `Bearer ${lanes[lane]!.access_token}` } }),
  );
  let signIns = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (signIns++ < 200) await signIn(base);
    }),
  );
  console.log(`  load: ${flows} flows, ${refreshes} refreshes, ${userinfo} userinfo calls, 200 sign-ins`);
}

/** DELIVERIES webhook events, delivered by the deployment's worker to a receiver on loopback. */
async function workerLoad(d: Deployment, api: ServiceNode): Promise<void> {
  const receiver = spawn(process.execPath, ['-e', RECEIVER], {
    env: { KEY: d.ca.key, CERT: d.ca.cert },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const db = createDb(d.url.toString());
  try {
    const port = await new Promise<string>((resolve, reject) => {
      receiver.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
      receiver.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
    });
    const { token } = await signIn(api.url);
    const [org] = await call<{ id: string; name: string }[]>(`${api.url}/api/v1/orgs`, {
      headers: { authorization: `Bearer ${token}` },
    });
    await call(
      `${api.url}/api/v1/webhooks`,
      json({ url: `https://localhost:${port}/hooks`, events: ['api_key.created'], organizationId: org!.id }, token),
    );
    await db.$transaction(
      (tx) =>
        emitEvents(tx, Array(DELIVERIES).fill('api_key.created' as const), org!, {
          apiKey: { id: 'memory', name: 'memory', role: 'member' },
        }),
      { timeout: 60_000 },
    );
    const deadline = performance.now() + 180_000;
    for (;;) {
      const [{ n }] = await db.$queryRaw<[{ n: number }]>`
        select count(*)::int as n from webhook_deliveries where status = 'delivered'`;
      if (n >= DELIVERIES) break;
      if (performance.now() > deadline) throw new Error(`only ${n} of ${DELIVERIES} deliveries in 180 s`);
      await pause(100);
    }
    console.log(`  load: ${DELIVERIES} webhook deliveries`);
  } finally {
    await db.$disconnect();
    receiver.kill();
  }
}

const rows: string[] = [];
for (const role of ['api', 'worker', 'all'] as const) {
  const name = `tessera_memory_${role}_${randomBytes(3).toString('hex')}`;
  await withAdmin((admin) => admin.query(`create database "${name}"`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const d: Deployment = {
    url,
    dataDir: await mkdtemp(path.join(os.tmpdir(), 'tessera-memory-')),
    ca: makeTestCa(['localhost']),
    nodes: [],
  };
  try {
    console.log(`ROLE=${role}`);
    // A worker's webhook is made through an API process beside it, which also migrates the database first.
    const helper = role === 'worker' ? await start(d, 'api') : undefined;
    const measured = await start(d, role);
    await pause(5_000);
    const pid = measured.child!.pid!;
    const idle = await rssMB(pid);
    const peak = await peakDuring(pid, async () => {
      if (role !== 'worker') await apiLoad(measured.url);
      if (role !== 'api') await workerLoad(d, helper ?? measured);
    });
    const after = await rssMB(pid);
    await pause(10_000);
    const later = await rssMB(pid);
    const row = `| ${role} | ${idle.toFixed(0)} | ${peak.toFixed(0)} | ${after.toFixed(0)} | ${later.toFixed(0)} |`;
    console.log(row);
    rows.push(row);
  } finally {
    await Promise.all(d.nodes.filter((n) => n.child?.exitCode === null).map((n) => signalNode(n, 'SIGTERM')));
    d.ca.remove();
    await rm(d.dataDir, { recursive: true, force: true });
    await withAdmin((admin) => admin.query(`drop database if exists "${name}" with (force)`));
  }
}
console.log(
  ['| ROLE | at rest (MB) | peak under load | right after | 10 s later |', '|---|---:|---:|---:|---:|', ...rows].join(
    '\n',
  ),
);
