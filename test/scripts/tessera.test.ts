// The `tessera` command-line tool, run as a process against a running service: it speaks only REST, prints
// readable text or --json, and exits 0 on success, 1 on an API error (its description on stderr), 2 on bad usage.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { copyFile, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
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
/** The platform admin's session: REST answers to compare --json with, and TESSERA_TOKEN for what needs a person. */
let admin: Awaited<ReturnType<typeof signIn>>;
/** A signed-in person instead of an API key: `organizations create` refuses keys. */
const asPerson = () => ({
  TESSERA_API_KEY: undefined,
  TESSERA_API_SECRET: undefined,
  TESSERA_TOKEN: admin.login.token as string,
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the tool with `args`, as `npx tessera` would (through Node 24), credentials from the environment; `input`
 * is written to its standard input (closed at once when not given).
 */
function tessera(
  args: string[],
  env: Record<string, string | undefined> = {},
  {
    // The launcher on Node 24, as `npx tessera` there: it turns on the compile cache before the tool's TypeScript loads.
    command = [process.execPath, ['scripts/tessera-bin.cjs']],
    input = '',
  }: { command?: [string, string[]]; input?: string } = {},
): Promise<Run> {
  const environment: Record<string, string | undefined> = {
    ...process.env,
    TESSERA_URL: server.url,
    TESSERA_API_KEY: operatorKey.key,
    TESSERA_API_SECRET: operatorKey.secret,
    // No one signed in with `tessera login` (tessera-login.browser.test.ts): the machine's own file is not read.
    XDG_CONFIG_HOME: path.join(os.tmpdir(), 'tessera-test-no-login'),
    ...env,
  };
  return new Promise((resolve) => {
    const child = execFile(
      command[0],
      [...command[1], ...args],
      { cwd: ROOT, env: environment },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
    child.stdin!.end(input);
  });
}

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP server on a free port of 127.0.0.1 that records every request it gets, then answers with `handle`. */
async function recordingServer(handle: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const seen: Seen[] = [];
  const http = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      handle(req, res, body);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((resolve) => http.close(() => resolve())) };
}

/** Passes a request on to the test server as it came (method, headers, body) and its answer back. */
function proxy(req: IncomingMessage, res: ServerResponse, body: string, path: string) {
  const target = new URL(path, server.url);
  const forwarded = httpRequest(
    target,
    { method: req.method, headers: { ...req.headers, host: target.host } },
    (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    },
  );
  forwarded.end(body);
}

/**
 * A `node` older than 24 on the PATH outside node_modules (the system's), for the bin's launcher; null when none, which
 * the launcher's test reports as a failure (README, Test it: the tests need one, as `.ci/run` checks).
 */
function olderNode(): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const node = path.join(dir, 'node');
    if (!dir || dir.includes('node_modules') || !existsSync(node)) continue;
    const major = Number(
      execFileSync(node, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).trim(),
    );
    if (major < 24) return node;
  }
  return null;
}
const OLDER_NODE = olderNode();

const SECRET_WARNING =
  'warning: --secret is visible to other users in the process list; give the secret with --secret-stdin or TESSERA_API_SECRET instead\n';

beforeAll(async () => {
  server = await startTestServer();
  admin = await signIn(server.url, ADMIN.email, ADMIN.password);
  tenant = await createTenant(server.url, admin.api);
  const created = await admin.api.post('/api/v1/api-keys', { name: 'cli', role: 'admin' });
  operatorKey = { key: created.body.key, secret: created.body.secret };
  const theirs = await tenant.admin.api.post('/api/v1/api-keys', { name: 'tenant cli' });
  tenantKey = { key: theirs.body.key, secret: theirs.body.secret };
});
afterAll(() => server?.stop());

describe('tessera', () => {
  // npm's check for a newer npm (a registry request) is off: the tool's help must not wait on the network.
  it('is `npx tessera`: `--help` lists the commands, and leaves the installed build alone', async () => {
    // A cache of its own, as on a machine where npx has not run this package yet: npx must run the link that
    // postinstall made, not install the package into its cache and run its install scripts there, which would
    // rebuild the portal that the suite's services are serving.
    const cache = await mkdtemp(path.join(os.tmpdir(), 'tessera-npx-'));
    const built = () =>
      Promise.all(
        ['portal/build/handler.js', 'prisma/generated/client/client.ts'].map(
          async (f) => (await stat(path.join(ROOT, f))).mtimeMs,
        ),
      );
    const before = await built();
    try {
      const run = await tessera(
        ['--help'],
        { npm_config_update_notifier: 'false', npm_config_cache: cache },
        { command: ['npx', ['--no-install', 'tessera']] },
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('products create');
      expect(run.stdout).toContain('subscriptions cancel');
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
    expect(await built()).toEqual(before);
  });

  it('creates, lists, reads, updates and deletes products', async () => {
    const created = await tessera([
      'products',
      'create',
      '--name',
      'Reports',
      '--slug',
      'reports',
      '--description',
      'Dashboards',
      '--feature',
      'export',
      '--feature',
      'share',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const product = JSON.parse(created.stdout);
    expect(product).toMatchObject({
      name: 'Reports',
      slug: 'reports',
      description: 'Dashboards',
      features: ['export', 'share'],
    });

    const listed = await tessera(['products', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^SLUG\s+NAME\s+FEATURES\s+ID/);
    expect(listed.stdout).toMatch(/reports\s+Reports\s+export,share\s+/);

    const got = await tessera(['products', 'get', 'reports']);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/features:\s+export, share/);

    const updated = await tessera([
      'products',
      'update',
      product.id,
      '--name',
      'Reporting',
      '--feature',
      'pdf',
      '--json',
    ]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ name: 'Reporting', slug: 'reports', features: ['pdf'] });

    const deleted = await tessera(['products', 'delete', product.id]);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toBe(`deleted product reports (${product.id})\n`);
    const gone = await tessera(['products', 'get', 'reports']);
    expect(gone).toMatchObject({ code: 1, stdout: '' });
    expect(gone.stderr).toBe('error: Product not found\n');
  });

  it('creates, lists, reads, updates and cancels subscriptions, naming the product by slug', async () => {
    expect((await tessera(['products', 'create', '--name', 'Seats', '--slug', 'seats'])).code).toBe(0);
    const created = await tessera([
      'subscriptions',
      'create',
      '--org',
      tenant.id,
      '--product',
      'seats',
      '--seats',
      '5',
      '--price',
      '19.99',
      '--cycle',
      'yearly',
      '--status',
      'trial',
      '--end-date',
      '2030-01-01T00:00:00Z',
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const sub = JSON.parse(created.stdout);
    expect(sub).toMatchObject({
      organization_id: tenant.id,
      total_seats: 5,
      price_per_seat: 19.99,
      billing_cycle: 'yearly',
      status: 'trial',
      end_date: '2030-01-01T00:00:00.000Z',
    });

    const listed = await tessera(['subscriptions', 'list', '--org', tenant.id, '--status', 'trial']);
    expect(listed.code).toBe(0);
    // The table shows ids short, by their random last 8 characters; `get` and --json whole.
    expect(listed.stdout).toContain(sub.id.slice(-8));
    expect(listed.stdout).not.toContain(sub.id);
    expect(listed.stdout).toMatch(/trial\s+0\/5\s+19\.99\s+yearly\s+2030-01-01\n/);

    const got = await tessera(['subscriptions', 'get', sub.id]);
    expect(got.stdout).toMatch(/seats:\s+0 of 5 assigned/);
    expect(got.stdout).toMatch(/price per seat:\s+19\.99/);

    const updated = await tessera([
      'subscriptions',
      'update',
      sub.id,
      '--seats',
      '8',
      '--status',
      'active',
      '--end-date',
      'none',
      '--json',
    ]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ total_seats: 8, status: 'active', end_date: null });

    const cancelled = await tessera(['subscriptions', 'cancel', sub.id]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toMatch(/status:\s+cancelled/);
    // The tenant's own key reads its organization's subscriptions.
    const theirs = await tessera(['subscriptions', 'list', '--json'], {
      TESSERA_API_KEY: tenantKey.key,
      TESSERA_API_SECRET: tenantKey.secret,
    });
    expect(JSON.parse(theirs.stdout).subscriptions.map((s: { id: string }) => s.id)).toEqual([sub.id]);
  });

  it('exits 1 with the API error on stderr', async () => {
    const refused = await tessera(['products', 'create', '--name', 'X', '--slug', 'x'], {
      TESSERA_API_KEY: tenantKey.key,
      TESSERA_API_SECRET: tenantKey.secret,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('error: Your role does not allow this\n');
    const invalid = await tessera(['products', 'create', '--name', 'X', '--slug', 'Not A Slug']);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^error: The request is invalid\n {2}slug: must be 1 to 63 lowercase letters/);
    const badKey = await tessera(['products', 'list'], { TESSERA_API_SECRET: 'wrong' });
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/^error: /);
    const missingProduct = await tessera([
      'subscriptions',
      'create',
      '--org',
      tenant.id,
      '--product',
      'nope',
      '--seats',
      '1',
      '--price',
      '1',
      '--cycle',
      'monthly',
      '--status',
      'active',
    ]);
    expect(missingProduct).toMatchObject({ code: 1, stderr: 'error: Product not found\n' });
    const unreachable = await tessera(['products', 'list', '--url', 'http://127.0.0.1:1']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: cannot reach http:\/\/127\.0\.0\.1:1/);
  });

  it("exits 2 on bad usage, with the command's usage on stderr", async () => {
    const cases: string[][] = [
      ['products', 'create', '--name', 'No slug'],
      ['products', 'create', '--name', 'X', '--slug', 'x', '--colour', 'red'],
      ['products', 'get'],
      ['products', 'list', 'extra'],
      ['products', 'update', 'some-id'],
      [
        'subscriptions',
        'create',
        '--org',
        'o',
        '--product',
        'p',
        '--seats',
        'many',
        '--price',
        '1',
        '--cycle',
        'monthly',
        '--status',
        'active',
      ],
      [
        'subscriptions',
        'create',
        '--org',
        'o',
        '--product',
        'p',
        '--seats',
        '1',
        '--price',
        '1',
        '--cycle',
        'weekly',
        '--status',
        'active',
      ],
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
    const noCredentials = await tessera(['products', 'list'], {
      TESSERA_API_KEY: undefined,
      TESSERA_API_SECRET: undefined,
    });
    expect(noCredentials.code).toBe(2);
    expect(noCredentials.stderr).toMatch(/credentials missing/);
  });

  it('prints help for every command and exits 0, every line within 100 columns', async () => {
    const fits = (text: string, name: string) => {
      for (const line of text.split('\n')) expect([...line].length, `${name}: ${line}`).toBeLessThanOrEqual(100);
    };
    for (const name of [
      'login',
      'logout',
      'whoami',
      'organizations create',
      'organizations list',
      'organizations get',
      'products create',
      'products list',
      'products get',
      'products update',
      'products delete',
      'subscriptions create',
      'subscriptions list',
      'subscriptions get',
      'subscriptions update',
      'subscriptions cancel',
    ]) {
      const run = await tessera([...name.split(' '), '--help']);
      expect(run.code, name).toBe(0);
      expect(run.stdout, name).toMatch(new RegExp(`^Usage: tessera ${name}`));
      fits(run.stdout, name);
    }
    fits((await tessera(['--help'])).stdout, 'tessera --help');
    expect((await tessera(['subscriptions', '--help'])).stdout).toContain('subscriptions update');
    expect((await tessera(['organizations', '--help'])).stdout).toMatch(
      /organizations get\s+Show one organization, named by its id or its name/,
    );
  }, 90_000); // fifteen processes started one after another: over 30 s on a busy 2-core machine

  // The key and secret go to the --url origin only (scheme, host and port): a redirect elsewhere is refused, not followed.
  it('refuses a redirect to another origin, sending nothing there, and exits 1 naming it', async () => {
    const elsewhere = await recordingServer((_req, res) => {
      res
        .writeHead(201, { 'content-type': 'application/json' })
        .end(JSON.stringify({ id: 'p', name: 'Stolen', slug: 'stolen', features: [] }));
    });
    const front = await recordingServer((req, res) =>
      res.writeHead(307, { location: `${elsewhere.url}${req.url}` }).end(),
    );
    try {
      const run = await tessera(['products', 'create', '--name', 'Stolen', '--slug', 'stolen', '--url', front.url]);
      expect(
        elsewhere.seen.filter((r) => r.headers['x-api-secret'] !== undefined || r.headers.authorization !== undefined),
      ).toEqual([]);
      expect(elsewhere.seen).toEqual([]);
      expect(run).toMatchObject({ code: 1, stdout: '' });
      expect(run.stderr).toBe(
        `error: refused to follow a redirect to another origin, ${elsewhere.url}: the API key and secret go to ${front.url} only\n`,
      );
      expect(front.seen).toHaveLength(1);
      // The port alone makes another origin, and so does the scheme.
      const otherScheme = await recordingServer((req, res) =>
        res.writeHead(308, { location: `https://127.0.0.1:${new URL(front.url).port}${req.url}` }).end(),
      );
      try {
        const refused = await tessera(['products', 'list', '--url', otherScheme.url]);
        expect(refused.code).toBe(1);
        expect(refused.stderr).toContain(`another origin, https://127.0.0.1:${new URL(front.url).port}:`);
      } finally {
        await otherScheme.close();
      }
    } finally {
      await Promise.all([front.close(), elsewhere.close()]);
    }
  });

  it('follows a redirect within the same origin, keeping the method and body on 307, and stops after 5', async () => {
    // /v1/... answers 307 to /moved/v1/... on the same server, which passes the request on to the service.
    const front = await recordingServer((req, res, body) => {
      if (req.url!.startsWith('/moved/')) proxy(req, res, body, req.url!.slice('/moved'.length));
      else res.writeHead(307, { location: `/moved${req.url}` }).end();
    });
    try {
      const created = await tessera([
        'products',
        'create',
        '--name',
        'Moved',
        '--slug',
        'moved',
        '--feature',
        'a',
        '--json',
        '--url',
        front.url,
      ]);
      expect(created.code, created.stderr).toBe(0);
      expect(JSON.parse(created.stdout)).toMatchObject({ name: 'Moved', slug: 'moved', features: ['a'] });
      expect(front.seen.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /v1/products', 'POST /moved/v1/products']);
      expect(front.seen[1]!.body).toBe(front.seen[0]!.body);
      expect(front.seen[1]!.headers['x-api-secret']).toBe(operatorKey.secret);
      const got = await tessera(['products', 'get', 'moved', '--url', front.url]);
      expect(got.code, got.stderr).toBe(0);
      expect(got.stdout).toMatch(/name:\s+Moved/);
    } finally {
      await front.close();
    }
    const loop = await recordingServer((req, res) => res.writeHead(307, { location: req.url! }).end());
    try {
      const run = await tessera(['products', 'list', '--url', loop.url]);
      expect(run).toMatchObject({
        code: 1,
        stderr: `error: too many redirects (more than 5) from ${loop.url}/v1/products?limit=100\n`,
      });
      expect(loop.seen).toHaveLength(6);
    } finally {
      await loop.close();
    }
  });

  // An answer is checked where it is read: one of another shape is an error naming what was wrong, never a crash.
  it('exits 1 when the server answers something other than the documented shape', async () => {
    const odd = await recordingServer((req, res) => {
      if (req.url!.startsWith('/v1/products/')) {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
        return;
      }
      const body = req.url!.startsWith('/v1/products?')
        ? { products: [{ id: 'p', name: 'Odd', slug: 'odd', description: '', createdAt: 'x', updatedAt: 'x' }] }
        : { unexpected: true };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    try {
      expect(await tessera(['products', 'list', '--url', odd.url])).toEqual({
        code: 1,
        stdout: '',
        stderr:
          'error: the server answered something unexpected to GET /v1/products?limit=100\n  products[0].features: expected a list\n',
      });
      expect(await tessera(['subscriptions', 'get', 'some-id', '--json', '--url', odd.url])).toEqual({
        code: 1,
        stdout: '',
        stderr:
          'error: the server answered something unexpected to GET /v1/subscriptions/some-id\n  id: expected a string\n',
      });
      expect(await tessera(['products', 'get', 'odd', '--url', odd.url])).toEqual({
        code: 1,
        stdout: '',
        stderr:
          'error: the server answered something unexpected to GET /v1/products/odd\n  (the answer): expected an object\n',
      });
    } finally {
      await odd.close();
    }
  });

  // --secret shows in `ps` while the command runs (and stays in the shell's history): the secret comes from stdin or the environment.
  it('reads the secret from standard input with --secret-stdin, and warns about --secret', async () => {
    const noSecret = { TESSERA_API_SECRET: undefined };
    const created = await tessera(
      ['products', 'create', '--name', 'Piped', '--slug', 'piped', '--secret-stdin', '--json'],
      noSecret,
      { input: `${operatorKey.secret}\n` },
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toBe('');
    expect(JSON.parse(created.stdout)).toMatchObject({ name: 'Piped', slug: 'piped' });
    // Given, it wins over the environment; without a trailing newline it works as well.
    const listed = await tessera(
      ['products', 'list', '--secret-stdin'],
      { TESSERA_API_SECRET: 'wrong' },
      { input: operatorKey.secret },
    );
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/piped\s+Piped/);

    const empty = await tessera(['products', 'list', '--secret-stdin'], noSecret, { input: '\n' });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/^tessera products list: --secret-stdin: standard input held no secret\n/);
    const both = await tessera(['products', 'list', '--secret-stdin', '--secret', operatorKey.secret], noSecret, {
      input: operatorKey.secret,
    });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --secret-stdin or --secret, not both');

    const flagged = await tessera(['products', 'get', 'piped', '--secret', operatorKey.secret], noSecret);
    expect(flagged.code, flagged.stderr).toBe(0);
    expect(flagged.stdout).toMatch(/name:\s+Piped/);
    expect(flagged.stderr).toBe(SECRET_WARNING);

    const help = await tessera(['products', 'list', '--help']);
    expect(help.stdout).toMatch(/--secret-stdin\s+read the API key's secret from standard input/);
    expect(help.stdout).toMatch(/--secret SECRET\s+.*process list/);
  });

  it('creates, lists and reads organizations, named by id or by name', async () => {
    const name = `Org ${randomBytes(3).toString('hex')}`;
    const created = await tessera(['organizations', 'create', '--name', name, '--json'], asPerson());
    expect(created.code, created.stderr).toBe(0);
    const org = JSON.parse(created.stdout);
    expect(org).toMatchObject({ name, role: 'owner', is_operator: false });
    const text = await tessera(['organizations', 'create', '--name', `${name} too`], asPerson());
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^created organization ${name} too\nid:\\s+[0-9a-f-]{36}\n`));
    // An API key acts for no one, and an organization needs an owner.
    const byKey = await tessera(['organizations', 'create', '--name', 'Keyed']);
    expect(byKey).toMatchObject({
      code: 1,
      stdout: '',
      stderr:
        'error: Your role does not allow this: an organization is created by a signed-in person: run "tessera login" and leave out the API key\n',
    });

    const listed = await tessera(['organizations', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^NAME\s+ROLE\s+OPERATOR\s+CREATED\s+ID\n/);
    expect(listed.stdout).toMatch(
      new RegExp(`\n${name}\\s+\\S+\\s+no\\s+\\d{4}-\\d{2}-\\d{2}\\s+${org.id.slice(-8)}\n`),
    );
    expect(listed.stdout).not.toContain(org.id);
    const rest = (await admin.api.get('/v1/organizations?limit=100')).body;
    const json = JSON.parse((await tessera(['organizations', 'list', '--json'], asPerson())).stdout);
    expect(json).toEqual({ organizations: rest.organizations });

    for (const ref of [org.id, name]) {
      const got = await tessera(['organizations', 'get', ref]);
      expect(got.code, got.stderr).toBe(0);
      expect(got.stdout).toMatch(new RegExp(`^id:\\s+${org.id}\nname:\\s+${name}\n`));
      const gotJson = await tessera(['organizations', 'get', ref, '--json'], asPerson());
      expect(JSON.parse(gotJson.stdout)).toEqual((await admin.api.get(`/v1/organizations/${org.id}`)).body);
    }
    // The tenant's key sees its own organization only: another's name is unknown to it.
    const theirs = { TESSERA_API_KEY: tenantKey.key, TESSERA_API_SECRET: tenantKey.secret };
    expect(
      JSON.parse((await tessera(['organizations', 'list', '--json'], theirs)).stdout).organizations.map(
        (o: { id: string }) => o.id,
      ),
    ).toEqual([tenant.id]);
    expect(await tessera(['organizations', 'get', name], theirs)).toMatchObject({
      code: 1,
      stderr: `error: no organization is named "${name}": give its exact name or its id\n`,
    });
  });

  it('takes --org as an id or a unique name, and refuses an unknown or ambiguous name', async () => {
    expect((await tessera(['products', 'create', '--name', 'Named', '--slug', 'named'])).code).toBe(0);
    const terms = ['--seats', '2', '--price', '5', '--cycle', 'monthly', '--status', 'active'];
    const created = await tessera([
      'subscriptions',
      'create',
      '--org',
      tenant.name,
      '--product',
      'named',
      ...terms,
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const sub = JSON.parse(created.stdout);
    expect(sub).toMatchObject({ organization_id: tenant.id, total_seats: 2 });
    for (const org of [tenant.name, tenant.id]) {
      const listed = await tessera(['subscriptions', 'list', '--org', org, '--product', 'named', '--json']);
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).subscriptions.map((s: { id: string }) => s.id)).toEqual([sub.id]);
    }

    const unknown = await tessera(['subscriptions', 'create', '--org', 'No Such Org', '--product', 'named', ...terms]);
    expect(unknown).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'error: no organization is named "No Such Org": give its exact name or its id\n',
    });
    // Longer than any name (and than the list's search takes): simply no such name.
    expect(await tessera(['subscriptions', 'list', '--org', 'x'.repeat(201)])).toMatchObject({
      code: 1,
      stderr: `error: no organization is named "${'x'.repeat(201)}": give its exact name or its id\n`,
    });
    // A name is matched exactly: the names that contain it, in any case, are listed.
    const upper = tenant.name.toUpperCase();
    expect(await tessera(['subscriptions', 'list', '--org', upper])).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `error: no organization is named exactly "${upper}"; these names contain it: give one exactly, or its id\n  ${tenant.id}: ${tenant.name}\n`,
    });

    const twin = `Twin ${randomBytes(3).toString('hex')}`;
    const twins = [];
    for (let i = 0; i < 2; i++)
      twins.push(JSON.parse((await tessera(['organizations', 'create', '--name', twin, '--json'], asPerson())).stdout));
    const ambiguous = await tessera(['subscriptions', 'create', '--org', twin, '--product', 'named', ...terms]);
    expect(ambiguous).toMatchObject({ code: 1, stdout: '' });
    expect(ambiguous.stderr).toBe(
      `error: 2 organizations are named "${twin}": give one's id\n${twins.map((o) => `  ${o.id}: created ${o.created_at}\n`).join('')}`,
    );
    expect(await tessera(['organizations', 'get', twin])).toMatchObject({ code: 1, stderr: ambiguous.stderr });
    // Nothing was created for either; by its id, each works.
    for (const o of twins) {
      expect(JSON.parse((await tessera(['subscriptions', 'list', '--org', o.id, '--json'])).stdout)).toEqual({
        subscriptions: [],
      });
    }
    const byId = await tessera([
      'subscriptions',
      'create',
      '--org',
      twins[1].id,
      '--product',
      'named',
      ...terms,
      '--json',
    ]);
    expect(byId.code, byId.stderr).toBe(0);
    expect(JSON.parse(byId.stdout).organization_id).toBe(twins[1].id);
  });

  it('names a product by its slug or its id in every command', async () => {
    const create = async (slug: string) =>
      JSON.parse((await tessera(['products', 'create', '--name', slug, '--slug', slug, '--json'])).stdout);
    const insights = await create('insights');

    for (const ref of ['insights', insights.id]) {
      const got = await tessera(['products', 'get', ref, '--json']);
      expect(got.code, got.stderr).toBe(0);
      expect(JSON.parse(got.stdout)).toEqual(insights);
      expect((await tessera(['products', 'get', ref])).stdout).toMatch(new RegExp(`^id:\\s+${insights.id}\n`));
    }
    const bySlug = await tessera(['products', 'update', 'insights', '--name', 'Insights', '--json']);
    expect(bySlug.code, bySlug.stderr).toBe(0);
    expect(JSON.parse(bySlug.stdout)).toMatchObject({ id: insights.id, name: 'Insights' });
    const byId = await tessera(['products', 'update', insights.id, '--slug', 'insight', '--json']);
    expect(byId.code, byId.stderr).toBe(0);
    expect(JSON.parse(byId.stdout)).toMatchObject({ id: insights.id, name: 'Insights', slug: 'insight' });

    const sub = await tessera([
      'subscriptions',
      'create',
      '--org',
      tenant.id,
      '--product',
      insights.id,
      '--seats',
      '1',
      '--price',
      '1',
      '--cycle',
      'monthly',
      '--status',
      'active',
      '--json',
    ]);
    expect(sub.code, sub.stderr).toBe(0);
    expect(JSON.parse(sub.stdout).product_id).toBe(insights.id);
    const bySubs = JSON.parse(
      (await tessera(['subscriptions', 'list', '--product', 'insight', '--json'])).stdout,
    ).subscriptions;
    expect(bySubs.map((s: { product_id: string }) => s.product_id)).toEqual([insights.id]);
    // By its slug, the delete reaches the product: its subscription keeps it.
    const inUse = await tessera(['products', 'delete', 'insight']);
    expect(inUse).toMatchObject({ code: 1, stdout: '' });
    expect(inUse.stderr).toMatch(/^error: The product has subscriptions/);

    const old = await create('insights-old');
    const deletedBySlug = await tessera(['products', 'delete', 'insights-old', '--json']);
    expect(deletedBySlug.code, deletedBySlug.stderr).toBe(0);
    expect(JSON.parse(deletedBySlug.stdout)).toEqual({ deleted: old.id });
    const older = await create('insights-older');
    const deletedById = await tessera(['products', 'delete', older.id]);
    expect(deletedById).toMatchObject({ code: 0, stdout: `deleted product insights-older (${older.id})\n` });
    for (const ref of ['insights-old', older.id, '01900000-0000-7000-8000-000000000000']) {
      expect(await tessera(['products', 'delete', ref]), ref).toMatchObject({
        code: 1,
        stdout: '',
        stderr: 'error: Product not found\n',
      });
      expect(await tessera(['products', 'update', ref, '--name', 'X']), ref).toMatchObject({
        code: 1,
        stderr: 'error: Product not found\n',
      });
    }
  });

  it('fits every table line in 100 characters, ids short, while --json gives every value whole', async () => {
    const name = `Wide ${'n'.repeat(190)}`;
    const features = ['a-rather-long-feature-name-one', 'a-rather-long-feature-name-two', 'x'.repeat(100)];
    const slug = `wide-${'s'.repeat(58)}`;
    const created = await tessera([
      'products',
      'create',
      '--name',
      name,
      '--slug',
      slug,
      ...features.flatMap((f) => ['--feature', f]),
      '--json',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const product = JSON.parse(created.stdout);
    const org = JSON.parse(
      (await tessera(['organizations', 'create', '--name', `Org ${'o'.repeat(190)}`, '--json'], asPerson())).stdout,
    );
    const sub = await tessera([
      'subscriptions',
      'create',
      '--org',
      org.id,
      '--product',
      slug,
      '--seats',
      '123456',
      '--price',
      '123456.78',
      '--cycle',
      'monthly',
      '--status',
      'cancelled',
      '--end-date',
      '2031-06-30T12:00:00Z',
    ]);
    expect(sub.code, sub.stderr).toBe(0);

    for (const list of [
      ['products', 'list'],
      ['organizations', 'list'],
      ['subscriptions', 'list'],
    ]) {
      const run = await tessera(list);
      expect(run.code, run.stderr).toBe(0);
      const lines = run.stdout.trimEnd().split('\n');
      expect(lines.length, list.join(' ')).toBeGreaterThan(1);
      for (const line of lines) expect([...line].length, `${list.join(' ')}: ${line}`).toBeLessThanOrEqual(100);
      expect(run.stdout, list.join(' ')).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
    }
    const products = await tessera(['products', 'list']);
    expect(products.stdout).toMatch(/^SLUG\s+NAME\s+FEATURES\s+ID\n/);
    expect(products.stdout).toMatch(
      new RegExp(`\nwide-s+…\\s+Wide n+…\\s+a-rather-long-[^\\s]*…\\s+${product.id.slice(-8)}\n`),
    );
    const subs = await tessera(['subscriptions', 'list', '--org', org.id]);
    expect(subs.stdout).toMatch(
      new RegExp(
        `\\s${org.id.slice(-8)}\\s+${product.id.slice(-8)}\\s+cancelled\\s+0/123456\\s+123456\\.78\\s+monthly\\s+2031-06-30\n$`,
      ),
    );

    // --json is the REST answer as it is, every page of it.
    const json = await tessera(['products', 'list', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({
      products: (await admin.api.get('/v1/products?limit=100')).body.products,
    });
    expect(JSON.parse(json.stdout).products).toContainEqual(product);
    const subsJson = await tessera(['subscriptions', 'list', '--json']);
    expect(JSON.parse(subsJson.stdout)).toEqual({
      subscriptions: (await admin.api.get('/v1/subscriptions?limit=100')).body.subscriptions,
    });
  });

  // `node` in a shell may be the system's, older than the tool's Node 24: the bin then runs the project's own Node.
  it("runs on the project's Node 24 when its bin is started by an older Node, also through that Node's npx", async () => {
    expect(
      OLDER_NODE,
      "a Node.js older than 24, with its npx, on the PATH outside node_modules (the system's)",
    ).not.toBeNull();
    const bin: [string, string[]] = [OLDER_NODE!, ['scripts/tessera-bin.cjs']];
    const listed = await tessera(['products', 'list', '--json'], {}, { command: bin });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stderr).toBe('');
    expect(JSON.parse(listed.stdout).products.length).toBeGreaterThan(0);
    // Standard input, and the exit codes, pass through.
    const piped = await tessera(
      ['products', 'list', '--secret-stdin'],
      { TESSERA_API_SECRET: undefined },
      { command: bin, input: operatorKey.secret },
    );
    expect(piped.code, piped.stderr).toBe(0);
    expect(await tessera(['products', 'get', 'no-such-product'], {}, { command: bin })).toMatchObject({
      code: 1,
      stderr: 'error: Product not found\n',
    });
    expect((await tessera(['products', 'get'], {}, { command: bin })).code).toBe(2);
    // Where the project's Node is not installed (another platform), the bin says what it needs.
    const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'tessera-bin-'));
    try {
      await mkdir(path.join(elsewhere, 'scripts'));
      await copyFile(path.join(ROOT, 'scripts/tessera-bin.cjs'), path.join(elsewhere, 'scripts/tessera-bin.cjs'));
      const alone = await tessera(
        ['products', 'list'],
        {},
        { command: [OLDER_NODE!, [path.join(elsewhere, 'scripts/tessera-bin.cjs')]] },
      );
      expect(alone).toMatchObject({ code: 1, stdout: '' });
      expect(alone.stderr).toMatch(
        /^tessera: needs Node\.js 24 or newer, and this is Node\.js v\d+\.\d+\.\d+\. Install Node\.js 24, or run "npm install" /,
      );
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }

    // The system's npx, run by that older Node, as `npx tessera` runs on such a machine: it must find the link in
    // node_modules/.bin (postinstall) and run it. A package "bin" made npx install the project into its cache first,
    // checking package.json's engines, which printed ten lines of `npm warn EBADENGINE` before the tool's output.
    const system = path.dirname(OLDER_NODE!);
    expect(existsSync(path.join(system, 'npx')), `npx beside ${OLDER_NODE}`).toBe(true);
    const cache = await mkdtemp(path.join(os.tmpdir(), 'tessera-npx-'));
    // Nothing of the suite's npm (Node 24, node_modules/.bin first on the PATH) is passed on.
    const outerNpm = Object.fromEntries(
      Object.keys(process.env)
        .filter((k) => /^npm_/i.test(k))
        .map((k) => [k, undefined]),
    );
    try {
      const run = await tessera(
        ['products', 'list', '--json'],
        {
          ...outerNpm,
          PATH: `${system}:/usr/bin:/bin`,
          npm_config_cache: cache,
          npm_config_update_notifier: 'false',
        },
        { command: [path.join(system, 'npx'), ['tessera']] },
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).not.toContain('EBADENGINE');
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toEqual({
        products: (await admin.api.get('/v1/products?limit=100')).body.products,
      });
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  });
});
