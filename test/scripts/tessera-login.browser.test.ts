// `tessera login` (docs/architecture.md#apps-without-secrets): the tool runs as a process and waits on the device flow
// while headless Chromium, signed in as a customer's owner (no member of the operator organization), approves its code
// on /device. Then every command acts as that person through Tessera's own platform-wide CLI client, within what the
// person may do; the credentials file is 0600, one entry per URL, rotated under a lock and written whole; logout
// revokes.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { launchChromium, signedInPage } from '../helpers/browser.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { signIn } from '../helpers/http.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
let server: TestServer;
let browser: Browser;
let tenant: Tenant;
let config: string;
let operatorOrganizationId: string;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts the tool as `npx tessera` would, signed in only through its credentials file (no key, no token). */
function start(args: string[]): { child: ChildProcess; done: Promise<Run>; stderr: () => string } {
  const env: Record<string, string | undefined> = {
    ...process.env,
    TESSERA_URL: server.url,
    XDG_CONFIG_HOME: config,
    TESSERA_API_KEY: undefined,
    TESSERA_API_SECRET: undefined,
    TESSERA_TOKEN: undefined,
    DISPLAY: undefined,
    WAYLAND_DISPLAY: undefined,
  };
  const child = spawn(process.execPath, ['scripts/tessera-bin.cjs', ...args], { cwd: ROOT, env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdin.end();
  const done = new Promise<Run>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done, stderr: () => stderr };
}

const tessera = (args: string[]) => start(args).done;

const credentialsPath = () => path.join(config, 'tessera', 'credentials.json');
const credentials = async () => JSON.parse(await readFile(credentialsPath(), 'utf8')) as Record<string, any>;

/** Runs `tessera login` and approves its code in Chromium as `person`; answers the finished run. */
async function logIn(person: { email: string }): Promise<Run> {
  const login = start(['login']);
  // when the tool shows the code and the page
  let shown: RegExpMatchArray | null = null;
  for (let i = 0; i < 200 && !shown; i++) {
    shown = login.stderr().match(/\(or open (\S+)\)/);
    if (!shown) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!shown) throw new Error(`tessera login showed no code: ${login.stderr()}`);
  // then a person signed in in a browser opens it and approves
  const page = await signedInPage(browser, server.url, { email: person.email, password: PASSWORD });
  await page.goto(shown[1]!);
  await expect(page.getByTestId('client-name').textContent()).resolves.toBe('Tessera command line');
  await Promise.all([
    page.getByTestId('device-answer').waitFor(),
    page.getByRole('button', { name: 'Approve' }).click(),
  ]);
  await page.context().close();
  return login.done;
}

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    const admin = await signIn(server.url, ADMIN.email, ADMIN.password);
    const organizations = await admin.api.get('/v1/organizations');
    operatorOrganizationId = organizations.body.organizations.find((o: { is_operator: boolean }) => o.is_operator).id;
    tenant = await createTenant(server.url, admin.api);
    config = await mkdtemp(path.join(os.tmpdir(), 'tessera-login-'));
  } catch (error) {
    await browser?.close();
    await server.stop();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (config) await rm(config, { recursive: true, force: true });
});

describe('tessera login', () => {
  test('signs a person in through the browser; every command then acts as them, and logout revokes', async () => {
    // given no one is signed in: a command says how to sign in
    const before = await tessera(['organizations', 'list']);
    expect(before.code).toBe(2);
    expect(before.stderr).toContain('run "tessera login"');

    // when the tenant's owner approves the tool's code
    const login = await logIn(tenant.owner);
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout.trim()).toBe(`signed in to ${server.url} as ${tenant.owner.email}`);
    expect(login.stderr).toMatch(/enter the code [B-Z]{4}-[B-Z]{4}/);

    // then the file is the person's alone, with one entry for this URL
    expect((await stat(credentialsPath())).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(credentialsPath()))).mode & 0o777).toBe(0o700);
    const stored = await credentials();
    expect(Object.keys(stored)).toEqual([server.url]);
    expect(stored[server.url]).toEqual({
      refresh_token: expect.stringMatching(/^tsr/),
      client_id: 'tessera-cli',
      user: { id: tenant.owner.id, email: tenant.owner.email },
    });

    // and whoami names them, the refresh token rotated by the command
    const who = await tessera(['whoami', '--json']);
    expect(who.code, who.stderr).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({ id: tenant.owner.id, email: tenant.owner.email });
    const rotated = (await credentials())[server.url].refresh_token;
    expect(rotated).not.toBe(stored[server.url].refresh_token);

    // and they create an organization, and see both of theirs: the token acts in each of the person's organizations
    const created = await tessera(['organizations', 'create', '--name', 'Made from the command line', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const made = JSON.parse(created.stdout);
    expect(made).toMatchObject({ name: 'Made from the command line', role: 'owner' });
    const listed = await tessera(['organizations', 'list', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(
      JSON.parse(listed.stdout)
        .organizations.map((o: { id: string }) => o.id)
        .sort(),
    ).toEqual([tenant.id, made.id].sort());

    // but no more than the person may: the catalog is the platform admins', another organization is not there
    const product = await tessera(['products', 'create', '--name', 'Nope', '--slug', 'nope']);
    expect(product.code).toBe(1);
    expect(product.stderr).toContain('error:');
    const foreign = await tessera(['organizations', 'get', operatorOrganizationId]);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain('not found');

    // when 20 commands run at once, each spends the stored refresh token in turn (a lock), and none is taken for a replay
    const many = await Promise.all(Array.from({ length: 20 }, () => tessera(['whoami'])));
    expect(many.map((r) => r.code)).toEqual(Array(20).fill(0));
    expect((await tessera(['whoami'])).code).toBe(0);
    expect((await readdir(path.dirname(credentialsPath()))).sort()).toEqual(['credentials.json']);

    // when they log out, the refresh token is revoked and forgotten
    const last = (await credentials())[server.url].refresh_token;
    const out = await tessera(['logout']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.trim()).toBe(`signed ${tenant.owner.email} out of ${server.url}`);
    expect(await credentials()).toEqual({});
    const spent = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: last, client_id: 'tessera-cli' }),
    });
    expect(spent.status).toBe(400);
    expect((await spent.json()).error).toBe('invalid_grant');
    const after = await tessera(['whoami']);
    expect(after.code).toBe(2);
    expect((await tessera(['logout'])).stdout.trim()).toBe(`no one was signed in to ${server.url}`);
  }, 120_000);

  test('a new login ends the one it replaces; a command killed at any moment leaves the credentials file whole', async () => {
    expect((await logIn(tenant.member)).code).toBe(0);
    const replaced = (await credentials())[server.url].refresh_token;
    const login = await logIn(tenant.member);
    expect(login.code, login.stderr).toBe(0);
    const spent = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: replaced, client_id: 'tessera-cli' }),
    });
    expect((await spent.json()).error).toBe('invalid_grant');

    for (let i = 0; i < 12; i++) {
      const run = start(['whoami']);
      await new Promise((resolve) => setTimeout(resolve, 100 + 60 * i));
      run.child.kill('SIGKILL');
      await run.done;
      // The file is always one that a command wrote whole: it parses, and holds this URL's entry whole, or none once
      // a kill fell between the server's rotation and the write and the next command found that sign-in ended.
      const file = await credentials();
      expect([[], [server.url]]).toContainEqual(Object.keys(file));
      if (file[server.url]) expect(file[server.url].user.email).toBe(tenant.member.email);
    }
    // and a lock a killed command left behind holds no one back
    const next = await tessera(['whoami']);
    expect(next.stderr).not.toContain('is held by another tessera command');
  }, 120_000);
});
