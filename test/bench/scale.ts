// `npm run bench:scale`: what the hot paths and the list pages cost as the data grows (docs/architecture.md#bounded-storage).
// SCALE=10000 (default), 1000000 or 10000000 accounts, with everything beside them in proportion (scale-seed.ts),
// seeded by SQL into the database `tessera_scale_<SCALE>` of BENCH_DATABASE_URL's server (a superuser; the local
// server's by default). The seeded database is kept for the next run at the same scale and shape (SCALE_RESEED=1
// seeds it again): 10 million accounts take a while to seed.
//
// Then one `ROLE=api` process (`node server/main.ts`, as an operator runs it) is measured from this process, each
// case SCALE_REQUESTS requests (default 2,000; sign-ins 200), C=16 (SCALE_CONCURRENCY) at a time: operations a
// second, p50 and p99. Last, the CSV export of the large organization's audit trail (a million entries at the
// largest scales), with the server's resident memory sampled every 50 ms while it streams.
//
// SCALE_REFRESH_PER_GRANT (5) and SCALE_AUDIT_PER_USER (10) change the proportions; SCALE_RESULTS=<file> writes
// the figures as JSON.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { hashPassword } from '../../schema/lib/crypto.ts';
import { ADMIN } from '../helpers/server.ts';
import { freePort, nodeReady, serviceNode, signalNode, startNode } from '../e2e/process.ts';
import { BIG_OWNER_EMAIL, SEED_VERSION, memberEmail, SCALE_PASSWORD, scaleShape, seedScale } from './scale-seed.ts';

const users = Number(process.env.SCALE ?? 10_000);
const shape = scaleShape(users, {
  refreshPerGrant: Number(process.env.SCALE_REFRESH_PER_GRANT ?? 5),
  auditPerUser: Number(process.env.SCALE_AUDIT_PER_USER ?? 10),
});
const REQUESTS = Number(process.env.SCALE_REQUESTS ?? 2000);
const CONCURRENCY = Number(process.env.SCALE_CONCURRENCY ?? 16);
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
// The seeded database keeps the signing keys the service made under this key on its first start.
const SECRET_KEY = 'a1'.repeat(32);

interface CaseResult {
  name: string;
  perSecond: number;
  p50: number;
  p99: number;
}

const dbName = `tessera_scale_${users}`;
const dbUrl = new URL(ADMIN_URL);
dbUrl.pathname = `/${dbName}`;

/** The seeded database, made (migrated and seeded) unless one of this shape is there already. */
async function seededDatabase(): Promise<void> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ shape: string | null }>(
      `select shobj_description(oid, 'pg_database') as shape from pg_database where datname = $1`,
      [dbName],
    );
    const wanted = JSON.stringify({ ...shape, seed: SEED_VERSION });
    if (rows[0]?.shape === wanted && !process.env.SCALE_RESEED) {
      console.log(`${dbName}: seeded already (${wanted})`);
      return;
    }
    await admin.query(`drop database if exists "${dbName}" with (force)`);
    await admin.query(`create database "${dbName}"`);
    // The service's first start migrates and makes what every deployment has (the platform admin, signing keys).
    const first = await startApi();
    await signalNode(first.node, 'SIGTERM');
    await first.removeDataDir();
    const db = new pg.Client({ connectionString: dbUrl.toString() });
    await db.connect();
    const started = performance.now();
    try {
      console.log(`seeding ${dbName}: ${wanted}`);
      await seedScale(db, shape, await hashPassword(SCALE_PASSWORD), console.log);
    } finally {
      await db.end();
    }
    const { rows: size } = await admin.query<{ size: string }>(`select pg_size_pretty(pg_database_size($1)) as size`, [
      dbName,
    ]);
    console.log(`seeded in ${((performance.now() - started) / 1000).toFixed(0)} s: ${size[0]!.size}`);
    await admin.query(`comment on database "${dbName}" is '${wanted}'`);
  } finally {
    await admin.end();
  }
}

/** `n` requests, `concurrency` at a time, after a warm-up of 20: operations a second, p50 and p99 in ms. */
async function measure(
  name: string,
  call: (i: number, lane: number) => Promise<Response>,
  { n = REQUESTS, concurrency = CONCURRENCY, ok = (r: Response) => r.ok } = {},
): Promise<CaseResult> {
  const check = async (res: Response) => {
    const body = await res.text();
    if (!ok(res)) throw new Error(`${name}: HTTP ${res.status} ${body.slice(0, 300)}`);
  };
  for (let i = 0; i < Math.min(20, concurrency); i++) await check(await call(n + i, i));
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, lane) => {
      while (next < n) {
        const i = next++;
        const t = performance.now();
        await check(await call(i, lane));
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!;
  const result = { name, perSecond: n / seconds, p50: pct(0.5), p99: pct(0.99) };
  console.log(
    `${name.padEnd(34)} ${result.perSecond.toFixed(0).padStart(6)} /s   p50 ${result.p50.toFixed(1).padStart(6)} ms   p99 ${result.p99.toFixed(1).padStart(6)} ms`,
  );
  return result;
}

const rssKiB = async (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

/** One `ROLE=api` process on the scale database, ready. */
async function startApi() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-scale-'));
  const node = serviceNode('api', 'api', await freePort());
  startNode(node, {
    DATABASE_URL: dbUrl.toString(),
    SECRET_KEY,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    BASE_URL: node.url,
    LOG_LEVEL: 'warn',
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    RATE_LIMIT_API_KEY_PER_MINUTE: '100000000',
    RATE_LIMIT_ORGANIZATION_PER_HOUR: '100000000',
    SCIM_RATE_LIMIT_PER_MINUTE: '100000000',
  });
  await nodeReady(node, 120_000);
  return { node, removeDataDir: () => rm(dataDir, { recursive: true, force: true }) };
}

await seededDatabase();
const { node: api, removeDataDir } = await startApi();
const base = api.url;
const json = (method: string, body: unknown, token?: string): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify(body),
});
const bearer = (token: string): RequestInit => ({ headers: { authorization: `Bearer ${token}` } });
const form = (p: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(p),
});
async function call<T>(what: string, url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(`${base}${url}`, init);
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

const results: CaseResult[] = [];
try {
  type Login = { token: string; user: { id: string }; organization: { id: string } };
  const signIn = (email: string, password = SCALE_PASSWORD) =>
    call<Login>(`sign-in ${email}`, '/api/v1/auth/login', json('POST', { email, password }));
  const platform = await signIn(ADMIN.email, ADMIN.password);
  const owner = await signIn(BIG_OWNER_EMAIL);
  const big = owner.organization.id;

  // The large organization's own client, product and subscription, and its owner's seat (the licence check).
  const client = await call<{ client_id: string; client_secret: string }>(
    'client',
    '/api/v1/oauth-clients',
    json(
      'POST',
      {
        name: 'scale',
        redirect_uris: ['http://127.0.0.1/cb'],
        allowed_scopes: ['openid', 'email'],
        consent_required: false,
      },
      owner.token,
    ),
  );
  const slug = `scale-${randomBytes(3).toString('hex')}`;
  const product = await call<{ id: string }>(
    'product',
    '/v1/products',
    json('POST', { name: slug, slug, description: 'scale', features: ['export'] }, platform.token),
  );
  const subscription = await call<{ id: string }>(
    'subscription',
    '/v1/subscriptions',
    json(
      'POST',
      {
        organization_id: big,
        product_id: product.id,
        total_seats: 5,
        price_per_seat: 1,
        billing_cycle: 'monthly',
        status: 'active',
      },
      platform.token,
    ),
  );
  await call(
    'seat',
    `/api/v1/subscriptions/${subscription.id}/seats`,
    json('POST', { user_id: owner.user.id }, owner.token),
  );
  const scim = await call<{ token: string }>(
    'SCIM token',
    '/api/v1/scim-tokens',
    json('POST', { name: 'scale' }, owner.token),
  );

  const authorizeUrl = `/oauth/authorize?${new URLSearchParams({ client_id: client.client_id, redirect_uri: 'http://127.0.0.1/cb', response_type: 'code', scope: 'openid email', nonce: 'n' })}`;
  const codes: string[] = [];
  const authorize = async () => {
    const res = await fetch(`${base}${authorizeUrl}`, {
      redirect: 'manual',
      headers: { cookie: `tessera_session=${owner.token}` },
    });
    const code = new URL(res.headers.get('location') ?? 'http://x/').searchParams.get('code');
    if (code) codes.push(code);
    return res;
  };
  const exchange = (code: string) =>
    fetch(
      `${base}/oauth/token`,
      form({
        grant_type: 'authorization_code',
        code,
        redirect_uri: 'http://127.0.0.1/cb',
        client_id: client.client_id,
        client_secret: client.client_secret,
      }),
    );
  const ok302 = { ok: (r: Response) => r.status === 302 };
  results.push(await measure('authorize (with a session)', authorize, ok302));
  results.push(await measure('token: code exchange', () => exchange(codes.pop()!)));

  // Refresh tokens rotate: each lane keeps its own chain.
  const chains: string[] = [];
  let access = '';
  for (let lane = 0; lane < CONCURRENCY; lane++) {
    await authorize();
    const tokens = (await (await exchange(codes.pop()!)).json()) as { refresh_token: string; access_token: string };
    chains.push(tokens.refresh_token);
    access = tokens.access_token;
  }
  results.push(
    await measure('token: refresh', async (_, lane) => {
      const res = await fetch(
        `${base}/oauth/token`,
        form({
          grant_type: 'refresh_token',
          refresh_token: chains[lane]!,
          client_id: client.client_id,
          client_secret: client.client_secret,
        }),
      );
      const body = (await res.clone().json()) as { refresh_token?: string };
      if (body.refresh_token) chains[lane] = body.refresh_token;
      return res;
    }),
  );
  results.push(await measure('userinfo', () => fetch(`${base}/oauth/userinfo`, bearer(access))));
  results.push(
    await measure('licence check', () =>
      fetch(`${base}/api/v1/licenses/check?product=${slug}&feature=export`, bearer(access)),
    ),
  );
  results.push(
    await measure(
      'sign-in (password, argon2id)',
      (i) =>
        fetch(
          `${base}/api/v1/auth/login`,
          json('POST', {
            email: memberEmail(1 + ((i * 104_729) % users), shape.organizations),
            password: SCALE_PASSWORD,
          }),
        ),
      { n: Math.min(REQUESTS, 200) },
    ),
  );

  // The pages, first and second (by the first's cursor: the lists are keyset, never offset).
  const pages = async (name: string, url: string, token: string) => {
    const first = await call<{ next_cursor?: string | null }>(name, url, bearer(token));
    const sep = url.includes('?') ? '&' : '?';
    results.push(await measure(`${name}, first page`, () => fetch(`${base}${url}`, bearer(token))));
    if (first.next_cursor)
      results.push(
        await measure(`${name}, second page`, () =>
          fetch(`${base}${url}${sep}cursor=${encodeURIComponent(first.next_cursor!)}`, bearer(token)),
        ),
      );
  };
  await pages('users (platform admin)', '/v1/users?limit=50', platform.token);
  await pages('members of the large organization', `/v1/organizations/${big}/members?limit=50`, owner.token);
  await pages('audit search: action', '/api/v1/audit-logs?action=auth.login.failed&limit=50', owner.token);
  const member = memberEmail(7, shape.organizations);
  const db = new pg.Client({ connectionString: dbUrl.toString() });
  await db.connect();
  const { rows: ids } = await db.query<{ user_id: string; hook: string; group_id: string }>(
    `select (select id from users where email = $1) as user_id,
            (select id from webhooks where organization_id = $2 order by id limit 1) as hook,
            (select id from scim_groups where organization_id = $2 limit 1) as group_id`,
    [member, big],
  );
  const { rows: groupMembers } = await db.query<{ scim_user_id: string }>(
    `select scim_user_id from scim_group_members where group_id = $1 order by scim_user_id limit $2`,
    [ids[0]!.group_id, CONCURRENCY],
  );
  await db.end();
  await pages('audit search: actor', `/api/v1/audit-logs?actor=${ids[0]!.user_id}&limit=50`, owner.token);
  await pages('deliveries of a webhook', `/api/v1/webhooks/${ids[0]!.hook}/deliveries?limit=50`, owner.token);
  const scimHeaders = { authorization: `Bearer ${scim.token}`, 'content-type': 'application/scim+json' };
  results.push(
    await measure('SCIM Users: userName eq', (i) =>
      fetch(
        `${base}/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${memberEmail(1 + ((i * 7919) % shape.bigMembers), shape.organizations)}"`)}`,
        { headers: scimHeaders },
      ),
    ),
  );
  // Each lane takes one member out of the group and puts them back, in turn: the group keeps its size.
  const present = groupMembers.map(() => true);
  results.push(
    await measure(`SCIM Group PATCH (${shape.groupMembers} members)`, (_, lane) => {
      const value = groupMembers[lane]!.scim_user_id;
      const op = present[lane]
        ? { op: 'remove', path: `members[value eq "${value}"]` }
        : { op: 'add', path: 'members', value: [{ value }] };
      present[lane] = !present[lane];
      return fetch(`${base}/scim/v2/Groups/${ids[0]!.group_id}`, {
        method: 'PATCH',
        headers: scimHeaders,
        body: JSON.stringify({ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [op] }),
      });
    }),
  );

  // The CSV export streams: the server's memory while it sends the large organization's whole trail.
  const pid = api.child!.pid!;
  const before = await rssKiB(pid);
  let peak = before;
  const sampler = setInterval(() => void rssKiB(pid).then((kib) => (peak = Math.max(peak, kib))), 50);
  const started = performance.now();
  const res = await fetch(`${base}/admin/audit-logs/export`, { headers: { cookie: `tessera_session=${owner.token}` } });
  if (!res.ok) throw new Error(`CSV export: HTTP ${res.status}`);
  let exportRows = -1; // the header
  for await (const chunk of res.body!) exportRows += (chunk as Uint8Array).filter((b) => b === 10).length;
  clearInterval(sampler);
  const exportPeakMiB = (peak - before) / 1024;
  console.log(
    `CSV export: ${exportRows} rows in ${((performance.now() - started) / 1000).toFixed(1)} s, resident ${(before / 1024).toFixed(0)} MiB before, peak ${(peak / 1024).toFixed(0)} MiB (+${exportPeakMiB.toFixed(0)})`,
  );
  if (process.env.SCALE_RESULTS)
    await writeFile(
      process.env.SCALE_RESULTS,
      JSON.stringify({ shape, results, exportRows, exportPeakMiB, exportBeforeMiB: before / 1024 }, null, 2),
    );
} finally {
  await signalNode(api, 'SIGTERM');
  await removeDataDir();
}
