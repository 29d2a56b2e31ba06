// The `tessera` command-line tool, run as a process against a running service: it speaks only REST, prints
// readable text or --json, and exits 0 on success, 1 on an API error (its description on stderr), 2 on bad usage.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
let server: TestServer;
let tenant: Tenant;
let operatorKey: { key: string; secret: string };
let tenantKey: { key: string; secret: string };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the tool with `args`, as `npx tessera` would (through Node 24), credentials from the environment. */
function tessera(args: string[], env: Record<string, string | undefined> = {}, command: [string, string[]] = [process.execPath, ['scripts/tessera.ts']]): Promise<Run> {
  const environment: Record<string, string | undefined> = { ...process.env, TESSERA_URL: server.url, TESSERA_API_KEY: operatorKey.key, TESSERA_API_SECRET: operatorKey.secret, ...env };
  return new Promise((resolve) => {
    execFile(command[0], [...command[1], ...args], { cwd: ROOT, env: environment as NodeJS.ProcessEnv }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  server = await startTestServer();
  const admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, admin);
  const created = await admin.post('/api/v1/api-keys', { name: 'cli', role: 'admin' });
  operatorKey = { key: created.body.key, secret: created.body.secret };
  const theirs = await tenant.admin.api.post('/api/v1/api-keys', { name: 'tenant cli' });
  tenantKey = { key: theirs.body.key, secret: theirs.body.secret };
});
afterAll(() => server?.stop());

describe('tessera', () => {
  // npx is npm: under the whole suite's load its start took over 30 s once, so this test has more time. npm's
  // check for a newer npm (a registry request) is off: the tool's help must not wait on the network.
  it('is the package bin: `npx tessera --help` lists the commands, and leaves the installed build alone', { timeout: 90_000 }, async () => {
    // A cache of its own, as on a machine where npx has not run this package yet: npx then links the package into
    // it and runs its install scripts, which must not rebuild the portal that the suite's services are serving.
    const cache = await mkdtemp(path.join(os.tmpdir(), 'tessera-npx-'));
    const built = () => Promise.all(['portal/build/handler.js', 'prisma/generated/client/client.ts'].map(async (f) => (await stat(path.join(ROOT, f))).mtimeMs));
    const before = await built();
    try {
      const run = await tessera(['--help'], { npm_config_update_notifier: 'false', npm_config_cache: cache }, ['npx', ['--no-install', 'tessera']]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('products create');
      expect(run.stdout).toContain('subscriptions cancel');
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
    expect(await built()).toEqual(before);
  });

  it('creates, lists, reads, updates and deletes products', async () => {
    const created = await tessera(['products', 'create', '--name', 'Reports', '--slug', 'reports', '--description', 'Dashboards', '--feature', 'export', '--feature', 'share', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const product = JSON.parse(created.stdout);
    expect(product).toMatchObject({ name: 'Reports', slug: 'reports', description: 'Dashboards', features: ['export', 'share'] });

    const listed = await tessera(['products', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^SLUG\s+NAME\s+FEATURES\s+ID/);
    expect(listed.stdout).toMatch(/reports\s+Reports\s+export,share\s+/);

    const got = await tessera(['products', 'get', 'reports']);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/features:\s+export, share/);

    const updated = await tessera(['products', 'update', product.id, '--name', 'Reporting', '--feature', 'pdf', '--json']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ name: 'Reporting', slug: 'reports', features: ['pdf'] });

    const deleted = await tessera(['products', 'delete', product.id]);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toContain(`deleted product ${product.id}`);
    const gone = await tessera(['products', 'get', 'reports']);
    expect(gone).toMatchObject({ code: 1, stdout: '' });
    expect(gone.stderr).toBe('error: Product not found\n');
  });

  it('creates, lists, reads, updates and cancels subscriptions, naming the product by slug', async () => {
    expect((await tessera(['products', 'create', '--name', 'Seats', '--slug', 'seats'])).code).toBe(0);
    const created = await tessera([
      'subscriptions', 'create', '--org', tenant.id, '--product', 'seats', '--seats', '5', '--price', '19.99', '--cycle', 'yearly', '--status', 'trial',
      '--end-date', '2030-01-01T00:00:00Z', '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const sub = JSON.parse(created.stdout);
    expect(sub).toMatchObject({ organization_id: tenant.id, total_seats: 5, price_per_seat: 19.99, billing_cycle: 'yearly', status: 'trial', end_date: '2030-01-01T00:00:00.000Z' });

    const listed = await tessera(['subscriptions', 'list', '--org', tenant.id, '--status', 'trial']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(sub.id);
    expect(listed.stdout).toMatch(/trial\s+0\/5\s+19\.99\s+yearly/);

    const got = await tessera(['subscriptions', 'get', sub.id]);
    expect(got.stdout).toMatch(/seats:\s+0 of 5 assigned/);
    expect(got.stdout).toMatch(/price per seat:\s+19\.99/);

    const updated = await tessera(['subscriptions', 'update', sub.id, '--seats', '8', '--status', 'active', '--end-date', 'none', '--json']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ total_seats: 8, status: 'active', end_date: null });

    const cancelled = await tessera(['subscriptions', 'cancel', sub.id]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toMatch(/status:\s+cancelled/);
    // The tenant's own key reads its organization's subscriptions.
    const theirs = await tessera(['subscriptions', 'list', '--json'], { TESSERA_API_KEY: tenantKey.key, TESSERA_API_SECRET: tenantKey.secret });
    expect(JSON.parse(theirs.stdout).subscriptions.map((s: { id: string }) => s.id)).toEqual([sub.id]);
  });

  it('exits 1 with the API error on stderr', async () => {
    const refused = await tessera(['products', 'create', '--name', 'X', '--slug', 'x'], { TESSERA_API_KEY: tenantKey.key, TESSERA_API_SECRET: tenantKey.secret });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('error: Your role does not allow this\n');
    const invalid = await tessera(['products', 'create', '--name', 'X', '--slug', 'Not A Slug']);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^error: The request is invalid\n  slug: must be 1 to 63 lowercase letters/);
    const badKey = await tessera(['products', 'list'], { TESSERA_API_SECRET: 'wrong' });
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/^error: /);
    const missingProduct = await tessera(['subscriptions', 'create', '--org', tenant.id, '--product', 'nope', '--seats', '1', '--price', '1', '--cycle', 'monthly', '--status', 'active']);
    expect(missingProduct).toMatchObject({ code: 1, stderr: 'error: Product not found\n' });
    const unreachable = await tessera(['products', 'list', '--url', 'http://127.0.0.1:1']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: cannot reach http:\/\/127\.0\.0\.1:1/);
  });

  it('exits 2 on bad usage, with the command\'s usage on stderr', async () => {
    const cases: string[][] = [
      ['products', 'create', '--name', 'No slug'],
      ['products', 'create', '--name', 'X', '--slug', 'x', '--colour', 'red'],
      ['products', 'get'],
      ['products', 'list', 'extra'],
      ['products', 'update', 'some-id'],
      ['subscriptions', 'create', '--org', 'o', '--product', 'p', '--seats', 'many', '--price', '1', '--cycle', 'monthly', '--status', 'active'],
      ['subscriptions', 'create', '--org', 'o', '--product', 'p', '--seats', '1', '--price', '1', '--cycle', 'weekly', '--status', 'active'],
      ['subscriptions', 'list', '--status', 'paused'],
      ['subscriptions', 'frobnicate'],
      [],
    ];
    for (const args of cases) {
      const run = await tessera(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr, args.join(' ')).toMatch(/Usage: tessera/);
      expect(run.stdout, args.join(' ')).toBe('');
    }
    const noCredentials = await tessera(['products', 'list'], { TESSERA_API_KEY: undefined, TESSERA_API_SECRET: undefined });
    expect(noCredentials.code).toBe(2);
    expect(noCredentials.stderr).toMatch(/credentials missing/);
  });

  it('prints help for every command and exits 0', async () => {
    for (const name of ['products create', 'products list', 'products get', 'products update', 'products delete', 'subscriptions create', 'subscriptions list', 'subscriptions get', 'subscriptions update', 'subscriptions cancel']) {
      const run = await tessera([...name.split(' '), '--help']);
      expect(run.code, name).toBe(0);
      expect(run.stdout, name).toMatch(new RegExp(`^Usage: tessera ${name}`));
    }
    expect((await tessera(['subscriptions', '--help'])).stdout).toContain('subscriptions update');
  });
});
