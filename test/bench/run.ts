// `npm run bench`: throughput and latency of the hot paths (docs/architecture.md#hot-paths) against a real PostgreSQL, over HTTP on
// loopback: authorize with a session, the token endpoint (code exchange and refresh grant), userinfo, the licence
// check, an API-key REST call and a session REST call, each with the SQL statements it sends per request (counted
// through schema/db.ts onStatement); sign-in with a password alone and with a TOTP code; then webhook delivery: events delivered per second by one worker process to a
// fast local HTTPS receiver (another process).
// Uses BENCH_DATABASE_URL or the local server's `postgres` database to create a throw-away database.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { startTessera } from '../../server/start.ts';
import { onStatement } from '../../schema/db.ts';
import { emitEvents } from '../../schema/events/emit.ts';
import { makeTestCa } from '../helpers/https-receiver.ts';
import { Secret, TOTP } from 'otpauth';

let statements = 0;

const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 400);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
/** Rounds of a side-by-side comparison (sideBySide). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 3000);
/** BENCH_ONLY=userinfo,licence runs only the cases whose names start so (for a profile of one path). */
const ONLY = process.env.BENCH_ONLY?.split(',');
const wanted = (name: string) => !ONLY || ONLY.some((prefix) => name.startsWith(prefix));

// The receiver runs in its own process, so that it does not share the worker's event loop: it answers 200 at once.
const RECEIVER = `const s = require('node:https').createServer({ key: process.env.KEY, cert: process.env.CERT }, (q, r) => {
  q.resume(); q.on('end', () => r.writeHead(200, { 'content-type': 'text/plain' }).end('ok')); });
s.keepAliveTimeout = 60000; s.listen(0, '127.0.0.1', () => console.log(s.address().port));`;

async function measure(
  name: string,
  call: (i: number) => Promise<Response>,
  concurrency = CONCURRENCY,
  quiet = false,
  accept = (res: Response) => res.ok,
): Promise<number | undefined> {
  if (!wanted(name)) return;
  for (let i = 0; i < 20; i++) await call(i); // warm-up
  const latencies: number[] = [];
  statements = 0;
  let next = 0;
  const cpuBefore = process.cpuUsage();
  const machineBefore = await machineBusyMs();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        const t = performance.now();
        const res = await call(i);
        if (!accept(res)) throw new Error(`${name}: HTTP ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const ownMs = (cpu.user + cpu.system) / 1000;
  const otherMs = (await machineBusyMs()) - machineBefore - ownMs;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(1);
  const perRequest = (statements / REQUESTS).toFixed(1);
  if (!quiet)
    console.log(
      `${name.padEnd(28)} ${(REQUESTS / seconds).toFixed(0).padStart(6)} req/s   p50 ${pct(0.5)} ms   p99 ${pct(0.99)} ms   ${perRequest.padStart(4)} SQL statements/request   CPU/request: ${(ownMs / REQUESTS).toFixed(2)} ms here, ${(Math.max(0, otherMs) / REQUESTS).toFixed(2)} ms elsewhere`,
    );
  return REQUESTS / seconds;
}

/**
 * Two cases measured in turns, ROUNDS times, the order swapped every round, and the ratio of their medians: the
 * figure that compares them. One measurement of each, one after the other, differs by more than the paths do on a
 * shared machine (the process warms up, other tenants come and go).
 */
async function sideBySide(
  name: string,
  call: () => Promise<Response>,
  otherName: string,
  other: () => Promise<Response>,
) {
  if (!wanted(name) || !wanted(otherName)) return;
  const rates: [number[], number[]] = [[], []];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? [1, 0] : [0, 1];
    for (const which of order)
      rates[which]!.push((await measure(which ? otherName : name, which ? other : call, CONCURRENCY, true))!);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const [mine, theirs] = [median(rates[0]), median(rates[1])];
  console.log(
    `${`${name} / ${otherName}`.padEnd(28)} ${(mine / theirs).toFixed(2).padStart(6)}x     medians of ${ROUNDS} alternating rounds: ${mine.toFixed(0)} vs ${theirs.toFixed(0)} req/s (rounds ${rates[0].map((r, i) => (r / rates[1][i]!).toFixed(2)).join(', ')})`,
  );
}

/** CPU time the whole machine has been busy, from /proc/stat (the rest of it, past this process, is PostgreSQL's). */
async function machineBusyMs(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8').catch(() => 'cpu 0')).split('\n')[0]!;
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line.split(/\s+/).slice(1).map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1000) / 100; // USER_HZ is 100 on Linux
}

const dbName = `tessera_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`create database "${dbName}"`);
const url = new URL(ADMIN_URL);
url.pathname = `/${dbName}`;
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-bench-'));
const email = 'bench@tessera.test';
const password = 'bench password 123';
const secretKey = randomBytes(32).toString('hex');
// A TOTP code is accepted once (RFC 6238 5.2), so the TOTP sign-in case moves this clock a 30-second step on
// before each of its sign-ins; every other case runs at real time.
let clockOffsetMs = 0;
const clock = { now: () => new Date(Date.now() + clockOffsetMs) };
const running = await startTessera({
  clock,
  env: {
    DATABASE_URL: url.toString(),
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ROLE: 'api',
    LOG_LEVEL: 'silent',
    SECRET_KEY: secretKey,
    BOOTSTRAP_ADMIN_EMAIL: email,
    BOOTSTRAP_ADMIN_PASSWORD: password,
    RATE_LIMIT_API_KEY_PER_MINUTE: '1000000',
    RATE_LIMIT_ORGANIZATION_PER_HOUR: '1000000',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // BENCH_METRICS=1: the same paths with /metrics on, to measure what counting costs.
    ...(process.env.BENCH_METRICS ? { METRICS_TOKEN: 'bench-metrics-token-0123456789' } : {}),
  },
  logger: pino({ level: 'silent' }),
});
const base = running.url;
onStatement(running.base.db, () => statements++);
const json = (body: unknown, token?: string) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify(body),
});
try {
  const login = await (await fetch(`${base}/api/v1/auth/login`, json({ email, password }))).json();
  const key = await (await fetch(`${base}/api/v1/api-keys`, json({ name: 'bench' }, login.token))).json();
  const client = await (
    await fetch(
      `${base}/api/v1/oauth-clients`,
      json(
        {
          name: 'bench',
          redirect_uris: ['http://127.0.0.1/cb'],
          allowed_scopes: ['openid', 'email'],
          consent_required: false,
        },
        login.token,
      ),
    )
  ).json();
  const authorize = await fetch(
    `${base}/oauth/authorize?${new URLSearchParams({ client_id: client.client_id, redirect_uri: 'http://127.0.0.1/cb', response_type: 'code', scope: 'openid email', nonce: 'n' })}`,
    { redirect: 'manual', headers: { cookie: `tessera_session=${login.token}` } },
  );
  const code = new URL(authorize.headers.get('location')!).searchParams.get('code')!;
  const form = (p: Record<string, string>) => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(p),
  });
  const tokens = await (
    await fetch(
      `${base}/oauth/token`,
      form({
        grant_type: 'authorization_code',
        code,
        redirect_uri: 'http://127.0.0.1/cb',
        client_id: client.client_id,
        client_secret: client.client_secret,
      }),
    )
  ).json();

  console.log(`${REQUESTS} requests per case, ${CONCURRENCY} at a time, node ${process.versions.node}`);
  // Authorize with a session (a 302 back to the client with a code) makes the codes the exchange redeems: one per
  // exchange, warm-up included; made one at a time when this case is not run.
  const authorizeUrl = `${base}/oauth/authorize?${new URLSearchParams({ client_id: client.client_id, redirect_uri: 'http://127.0.0.1/cb', response_type: 'code', scope: 'openid email', nonce: 'n' })}`;
  const codes: string[] = [];
  const codeOf = (res: Response) =>
    new URL(res.headers.get('location') ?? 'http://127.0.0.1/').searchParams.get('code');
  const authorizeCall = async () => {
    const res = await fetch(authorizeUrl, {
      redirect: 'manual',
      headers: { cookie: `tessera_session=${login.token}` },
    });
    const code = codeOf(res);
    if (code) codes.push(code);
    return res;
  };
  await measure(
    'authorize (with a session)',
    authorizeCall,
    CONCURRENCY,
    false,
    (res) => res.status === 302 && codeOf(res) !== null,
  );
  while (wanted('token (code') && codes.length < REQUESTS + 20) await authorizeCall();
  await measure('token (code exchange)', () =>
    fetch(
      `${base}/oauth/token`,
      form({
        grant_type: 'authorization_code',
        code: codes.pop()!,
        redirect_uri: 'http://127.0.0.1/cb',
        client_id: client.client_id,
        client_secret: client.client_secret,
      }),
    ),
  );
  let refresh = tokens.refresh_token as string;
  // Refresh tokens rotate: each call must use the latest one, so this case runs one at a time.
  const refreshCall = async () => {
    const res = await fetch(
      `${base}/oauth/token`,
      form({
        grant_type: 'refresh_token',
        refresh_token: refresh,
        client_id: client.client_id,
        client_secret: client.client_secret,
      }),
    );
    const body = await res.clone().json();
    refresh = body.refresh_token;
    return res;
  };
  await measure('token (refresh grant, serial)', refreshCall, 1);
  const access = (await (await refreshCall()).json()).access_token as string;
  await measure('userinfo', () => fetch(`${base}/oauth/userinfo`, { headers: { authorization: `Bearer ${access}` } }));
  // The licence check, a hot path beside userinfo: the same access token, a seat on an active subscription.
  const product = await (
    await fetch(
      `${base}/v1/products`,
      json({ name: 'Bench', slug: 'bench', description: 'bench', features: ['export'] }, login.token),
    )
  ).json();
  const subscription = await (
    await fetch(
      `${base}/v1/subscriptions`,
      json(
        {
          organization_id: login.organization.id,
          product_id: product.id,
          total_seats: 5,
          price_per_seat: 1,
          billing_cycle: 'monthly',
          status: 'active',
        },
        login.token,
      ),
    )
  ).json();
  await fetch(`${base}/api/v1/subscriptions/${subscription.id}/seats`, json({ user_id: login.user.id }, login.token));
  const licenceCheck = () =>
    fetch(`${base}/api/v1/licenses/check?product=bench&feature=export`, {
      headers: { authorization: `Bearer ${access}` },
    });
  await measure('licence check', licenceCheck);
  await sideBySide('licence check', licenceCheck, 'userinfo', () =>
    fetch(`${base}/oauth/userinfo`, { headers: { authorization: `Bearer ${access}` } }),
  );
  await measure('REST with API key', () =>
    fetch(`${base}/api/v1/orgs`, { headers: { authorization: `Bearer ${key.key}`, 'x-api-secret': key.secret } }),
  );
  await measure('REST with session token', () =>
    fetch(`${base}/api/v1/users/me`, { headers: { authorization: `Bearer ${login.token}` } }),
  );
  await measure('REST with access token', () =>
    fetch(`${base}/api/v1/users/me`, { headers: { authorization: `Bearer ${access}` } }),
  );
  await measureSignIns();
  if (wanted('webhook')) await measureDelivery(login.token);
  const mem = process.memoryUsage();
  console.log(`memory: rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB, heap ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB`);
} finally {
  await running.stop();
  await admin.query(`drop database "${dbName}" with (force)`);
  await admin.end();
  await rm(dataDir, { recursive: true, force: true });
}

/**
 * Sign-in per second, one at a time: with the password alone (one argon2id hash), and with the password then a
 * TOTP code (the same hash, the mfa_token's statement, the code's check and the session in one transaction). The
 * second person is the admin's invitee, set up with TOTP here.
 */
async function measureSignIns() {
  if (!wanted('sign-in')) return;
  const admin = await (await fetch(`${base}/api/v1/auth/login`, json({ email, password }))).json();
  await measure('sign-in (password)', () => fetch(`${base}/api/v1/auth/login`, json({ email, password })), 1);
  const invited = await (
    await fetch(
      `${base}/v1/organizations/${admin.organization.id}/invitations`,
      json({ email: 'totp@tessera.test', role: 'member' }, admin.token),
    )
  ).json();
  const joined = await (
    await fetch(`${base}/api/v1/invitations/accept`, json({ token: invited.token, name: 'TOTP', password }))
  ).json();
  const enrolment = await (
    await fetch(`${base}/api/v1/users/me/mfa/totp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${joined.token}` },
    })
  ).json();
  const totp = new TOTP({ secret: Secret.fromBase32(enrolment.secret), algorithm: 'SHA1', digits: 6, period: 30 });
  const confirmed = await fetch(
    `${base}/api/v1/users/me/mfa/totp/confirm`,
    json({ code: totp.generate({ timestamp: clock.now().getTime() }) }, joined.token),
  );
  if (!confirmed.ok) throw new Error(`TOTP confirmation: HTTP ${confirmed.status} ${await confirmed.text()}`);
  await measure(
    'sign-in (password + TOTP)',
    async () => {
      clockOffsetMs += 30_000;
      const challenge = await (
        await fetch(`${base}/api/v1/auth/login`, json({ email: 'totp@tessera.test', password }))
      ).json();
      return fetch(
        `${base}/api/v1/auth/login/mfa`,
        json({ mfa_token: challenge.mfa_token, code: totp.generate({ timestamp: clock.now().getTime() }) }),
      );
    },
    1,
  );
  clockOffsetMs = 0;
}

/**
 * DELIVERIES events for one webhook, written in one transaction (emitEvents: the fan-out trigger makes the
 * deliveries and their jobs), then worked by one worker process (ROLE=worker, the default concurrency) against a
 * receiver on loopback: the time from the commit until every delivery is recorded delivered.
 */
async function measureDelivery(sessionToken: string) {
  const ca = makeTestCa(['localhost']);
  const receiver = spawn(process.execPath, ['-e', RECEIVER], {
    env: { KEY: ca.key, CERT: ca.cert },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const worker = await startTessera({
    env: {
      DATABASE_URL: url.toString(),
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      ROLE: 'worker',
      LOG_LEVEL: 'silent',
      SECRET_KEY: secretKey,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_CA_FILE: ca.caFile,
    },
    logger: pino({ level: 'silent' }),
  });
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  try {
    const port = await new Promise<string>((resolve, reject) => {
      receiver.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
      receiver.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
    });
    const [org] = await (
      await fetch(`${base}/api/v1/orgs`, { headers: { authorization: `Bearer ${sessionToken}` } })
    ).json();
    const hook = await fetch(
      `${base}/api/v1/webhooks`,
      json(
        { url: `https://localhost:${port}/hooks`, events: ['api_key.created'], organizationId: org.id },
        sessionToken,
      ),
    );
    if (hook.status !== 201) throw new Error(`webhook: HTTP ${hook.status} ${await hook.text()}`);
    const organization = { id: org.id as string, name: org.name as string };
    const delivered = async () =>
      (await db.query<{ n: number }>(`select count(*)::int as n from webhook_deliveries where status = 'delivered'`))
        .rows[0]!.n;
    const started = performance.now();
    await running.base.db.$transaction(
      (tx) =>
        emitEvents(tx, Array(DELIVERIES).fill('api_key.created'), organization, {
          apiKey: { id: 'bench', name: 'bench', role: 'member' },
        }),
      { timeout: 60_000 },
    );
    const committed = performance.now();
    const cpuBefore = process.cpuUsage();
    const deadline = started + 120_000;
    let done = 0;
    while ((done = await delivered()) < DELIVERIES && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const failed = (await db.query<{ n: number }>(`select count(*)::int as n from webhook_attempts where not success`))
      .rows[0]!.n;
    const afterCommit = seconds - (committed - started) / 1000;
    console.log(
      `${'webhook delivery (1 worker)'.padEnd(28)} ${(done / seconds).toFixed(0).padStart(6)} events/s   ${done}/${DELIVERIES} delivered in ${seconds.toFixed(1)} s   ${failed} failed attempts`,
    );
    // The worker's own rate: from the commit (the fan-out's transaction is the API's work) to the last delivery.
    console.log(
      `${'  after the commit'.padEnd(28)} ${(done / afterCommit).toFixed(0).padStart(6)} events/s   ${((cpu.user + cpu.system) / 1000 / Math.max(done, 1)).toFixed(2)} ms CPU/event in the worker process`,
    );
  } finally {
    await db.end();
    await worker.stop();
    receiver.kill();
    ca.remove();
  }
}
