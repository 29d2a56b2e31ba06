// `npm run db:backup` and `npm run db:restore` on a real embedded DATA_DIR, as an operator runs them: a backup while
// the service runs, a restore into a fresh DATA_DIR (with the same secret.key) and over the old one with --force,
// and a start on each that finds the users, clients, subscriptions and signing keys, and honours an access token
// issued before the backup. And the refusals: a running service, a missing file, a file that is no backup, a
// database that is not empty without --force. With DATABASE_URL, one database copied into another row for row.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listTables, qualified } from '../../scripts/backup-archive.ts';
import { createTestDatabase } from '../helpers/db.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { accessTokenOf, registerClient, type RegisteredClient } from '../helpers/oauth.ts';
import { ADMIN as TEST_ADMIN, startTestServer } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { cleanEnv, freePort, NODE, ROOT, runToEnd, type Ended } from '../e2e/process.ts';

const ADMIN = { email: 'owner@backup.test', password: 'a strong first password' };
const REDIRECT = 'https://rp.example.test/callback';
let work: string;
let original: string;
let fresh: string;
let backup: string;
let port: number;
let running: ChildProcess | undefined;

const url = () => `http://127.0.0.1:${port}`;
const env = (dataDir: string) => ({
  ...cleanEnv(),
  PORT: String(port),
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
  BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
});

/** The service on `dataDir`, ready; in a process group of its own, so that the clean-up reaches its PostgreSQL too. */
async function start(dataDir: string): Promise<void> {
  running = spawn(NODE, ['server/main.ts'], { cwd: ROOT, env: env(dataDir), stdio: 'ignore', detached: true });
  await waitFor(
    () =>
      fetch(`${url()}/readyz`).then(
        (r) => (r.ok ? true : undefined),
        () => undefined,
      ),
    60_000,
  );
}

/** SIGTERM, as an operator stops it, and its exit: the embedded PostgreSQL has stopped by then. */
async function stop(): Promise<void> {
  const child = running!;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  running = undefined;
}

const npmRun = (dataDir: string, ...args: string[]): Promise<Ended> =>
  runToEnd(['npm', 'run', '--silent', ...args], { DATA_DIR: dataDir, LOG_LEVEL: 'warn' });

/** A refusal: exit 1 and one line on stderr. */
function expectRefused(result: Ended, line: RegExp): void {
  expect(result.code, result.stdout + result.stderr).toBe(1);
  expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(line)]);
}

const kids = async () =>
  ((await (await fetch(`${url()}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys
    .map((k) => k.kid)
    .sort();
const organizationNames = async (api: Client) =>
  (await api.get('/v1/organizations?limit=100')).body.organizations.map((o: { name: string }) => o.name);

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'tessera-backup-'));
  original = path.join(work, 'original');
  fresh = path.join(work, 'fresh');
  backup = path.join(work, 'tessera.backup');
  port = await freePort();
});
afterAll(async () => {
  if (running?.pid) {
    try {
      process.kill(-running.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await rm(work, { recursive: true, force: true });
});

describe('npm run db:backup and db:restore', () => {
  let tenant: Tenant;
  let app: RegisteredClient;
  let subscriptionId: string;
  let accessToken: string;
  let keysBefore: string[];

  /** What the backup holds, seen through the service on the port now. */
  async function expectBackedUpData(): Promise<void> {
    // users: each signs in with their own password
    const owner = await signIn(url(), tenant.owner.email, PASSWORD);
    expect(owner.login.user.id).toBe(tenant.owner.id);
    const admin = await signIn(url(), tenant.admin.email, PASSWORD);
    const members = await owner.api.get(`/v1/organizations/${tenant.id}/members`);
    expect(members.status).toBe(200);
    expect(JSON.stringify(members.body)).toContain(tenant.member.id);
    // the client, the subscription and the signing keys
    const clients = await admin.api.get('/api/v1/oauth-clients');
    expect(clients.body.oauth_clients.map((c: { id: string }) => c.id)).toContain(app.id);
    const subscription = await admin.api.get(`/api/v1/subscriptions/${subscriptionId}`);
    expect(subscription.status).toBe(200);
    expect(subscription.body).toMatchObject({ id: subscriptionId, total_seats: 10, status: 'active' });
    expect(await kids()).toEqual(keysBefore);
    // an access token issued before the backup still verifies
    expect((await client(url(), { token: accessToken }).get('/oauth/userinfo')).status).toBe(200);
  }

  it(
    'backs up a running service and restores it into a fresh DATA_DIR with the same secret.key',
    { timeout: 240_000 },
    async () => {
      // given a service with people, a client, a product, a subscription and an access token
      await start(original);
      const platform = (await signIn(url(), ADMIN.email, ADMIN.password)).api;
      tenant = await createTenant(url(), platform);
      app = await registerClient(tenant.admin.api, {
        name: 'Backed-up app',
        redirect_uris: [REDIRECT],
        allowed_scopes: ['openid', 'profile', 'email'],
        consent_required: false,
      });
      const product = await platform.post('/v1/products', {
        name: 'Analytics',
        slug: 'analytics',
        description: 'Dashboards',
        features: ['export'],
      });
      expect(product.status, JSON.stringify(product.body)).toBe(201);
      const subscription = await platform.post('/api/v1/subscriptions', {
        organization_id: tenant.id,
        product_id: product.body.id,
        total_seats: 10,
        price_per_seat: 5,
        billing_cycle: 'monthly',
        status: 'active',
      });
      expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
      subscriptionId = subscription.body.id;
      accessToken = await accessTokenOf(url(), tenant.member, app, REDIRECT, 'openid profile');
      expect((await client(url(), { token: accessToken }).get('/oauth/userinfo')).status).toBe(200);
      keysBefore = await kids();

      // when it is backed up while it runs
      const made = await npmRun(original, 'db:backup', '--', backup);
      // then the backup is written, with a reminder of the key and not the key
      expect(made.code, made.stderr).toBe(0);
      expect(made.stdout).toMatch(/^backed up \d+ rows of \d+ tables to /);
      expect(made.stdout).toContain('useless without the same SECRET_KEY');
      const secretKey = (await readFile(path.join(original, 'secret.key'), 'utf8')).trim();
      expect(made.stdout + made.stderr).not.toContain(secretKey);

      // and a restore is refused while the service runs on that DATA_DIR
      expectRefused(
        await npmRun(original, 'db:restore', '--', backup, '--force'),
        /^db:restore: Tessera is running on .*: stop it, then restore$/,
      );

      // when the service stops, and the backup goes into a fresh DATA_DIR that holds the same secret.key
      await platform.post('/v1/organizations', { name: 'Made after the backup' });
      await stop();
      await mkdir(fresh);
      await copyFile(path.join(original, 'secret.key'), path.join(fresh, 'secret.key'));
      const restored = await npmRun(fresh, 'db:restore', '--', backup);
      expect(restored.code, restored.stderr).toBe(0);
      expect(restored.stdout).toMatch(/^restored \d+ rows of \d+ tables into the embedded database in /);

      // then a start there has everything the backup had, and nothing made after it
      await start(fresh);
      await expectBackedUpData();
      expect(await organizationNames((await signIn(url(), ADMIN.email, ADMIN.password)).api)).not.toContain(
        'Made after the backup',
      );
      await stop();
    },
  );

  it('replaces a database that is not empty only with --force', async () => {
    // given the original DATA_DIR, which holds an organization made after the backup
    expectRefused(
      await npmRun(original, 'db:restore', '--', backup),
      /^db:restore: the embedded database in .* is not empty \(rows in .*\): pass --force to replace its data with the backup$/,
    );
    const forced = await npmRun(original, 'db:restore', '--', backup, '--force');
    expect(forced.code, forced.stderr).toBe(0);

    await start(original);
    await expectBackedUpData();
    expect(await organizationNames((await signIn(url(), ADMIN.email, ADMIN.password)).api)).not.toContain(
      'Made after the backup',
    );
    await stop();
  });

  it('backs up a stopped service by starting its embedded PostgreSQL for the backup alone', async () => {
    const second = path.join(work, 'second.backup');
    const made = await npmRun(original, 'db:backup', '--', second);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stderr).toContain('Tessera is not running on');
    expect(made.stdout).toMatch(/^backed up \d+ rows/);
    // and it left nothing running: a restore may start at once
    const again = await npmRun(original, 'db:restore', '--', second, '--force');
    expect(again.code, again.stderr).toBe(0);
  });

  it('refuses a missing file, a file that is not a backup, and a DATA_DIR without a database, each in one line', async () => {
    expectRefused(
      await npmRun(original, 'db:restore', '--', path.join(work, 'no-such.backup')),
      /^db:restore: .*no-such\.backup does not exist$/,
    );
    expectRefused(await npmRun(original, 'db:restore', '--', work), /^db:restore: cannot read .* \(EISDIR\)$/);
    const text = path.join(work, 'notes.txt');
    await writeFile(text, 'not a backup\n');
    expectRefused(
      await npmRun(original, 'db:restore', '--', text),
      /^db:restore: .*notes\.txt is not a Tessera backup/,
    );
    const pgDump = path.join(work, 'pg.dump');
    await writeFile(pgDump, Buffer.concat([Buffer.from('PGDMP'), Buffer.alloc(64)]));
    expectRefused(
      await npmRun(original, 'db:restore', '--', pgDump),
      /^db:restore: .*pg\.dump is a pg_dump archive, not a Tessera backup/,
    );
    const cut = path.join(work, 'cut.backup');
    const whole = await readFile(backup);
    await writeFile(cut, whole.subarray(0, Math.floor(whole.length / 2)));
    expectRefused(
      await npmRun(original, 'db:restore', '--', cut, '--force'),
      /^db:restore: .*cut\.backup is (cut short or )?damaged/,
    );
    expectRefused(await npmRun(original, 'db:restore'), /^db:restore: usage: npm run db:restore -- FILE \[--force\]$/);
    expectRefused(
      await npmRun(path.join(work, 'empty'), 'db:backup', '--', path.join(work, 'x.backup')),
      /^db:backup: there is no embedded database in /,
    );
  });
});

/** Every table's rows, in their text form and a fixed order, by table name. */
async function contents(url: string): Promise<Record<string, string[]>> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const found: Record<string, string[]> = {};
    for (const { name } of await listTables(db)) {
      found[name] = (
        await db.query<{ row: string }>(`select t::text as row from only ${qualified(name)} t order by 1`)
      ).rows.map((r) => r.row);
    }
    return found;
  } finally {
    await db.end();
  }
}

describe('npm run db:backup and db:restore with DATABASE_URL', () => {
  it('copies one database into another, every row of every table the same', async () => {
    // given a database that a service has written to, now stopped
    const source = await createTestDatabase();
    const target = await createTestDatabase();
    try {
      const server = await startTestServer({ databaseUrl: source.url });
      try {
        const platform = (await signIn(server.url, TEST_ADMIN.email, TEST_ADMIN.password)).api;
        const tenant = await createTenant(server.url, platform);
        await registerClient(tenant.admin.api, {
          name: 'App',
          redirect_uris: [REDIRECT],
          allowed_scopes: ['openid'],
          consent_required: false,
        });
      } finally {
        await server.stop();
      }
      const file = path.join(work, 'database-url.backup');
      const runWith = (url: string, ...args: string[]) =>
        runToEnd(['npm', 'run', '--silent', ...args], { DATABASE_URL: url, DATA_DIR: path.join(work, 'unused') });

      // when it is backed up and restored into another database
      const made = await runWith(source.url, 'db:backup', '--', file);
      expect(made.code, made.stderr).toBe(0);
      const restored = await runWith(target.url, 'db:restore', '--', file);
      expect(restored.code, restored.stderr).toBe(0);
      expect(restored.stdout).toContain('into the database at DATABASE_URL');

      // then both hold the same rows, and a second restore needs --force
      const [before, after] = [await contents(source.url), await contents(target.url)];
      expect(Object.keys(after)).toEqual(Object.keys(before));
      expect(before['public.users']!.length).toBeGreaterThan(3);
      expect(after).toEqual(before);
      expectRefused(
        await runWith(target.url, 'db:restore', '--', file),
        /^db:restore: the database at DATABASE_URL is not empty/,
      );
    } finally {
      await source.drop();
      await target.drop();
    }
  });
});
