// Starts Tessera exactly as the README says (`npm start`, no DATABASE_URL: the embedded PostgreSQL under
// DATA_DIR), signs in, stops it with SIGTERM, and starts it again on the same data.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.ts';
import { cleanEnv, freePort, ROOT } from './process.ts';

let dataDir: string;
let port: number;

function start(dir = dataDir): {
  child: ChildProcess;
  output: () => string;
  exited: Promise<string>;
  closed: Promise<void>;
} {
  let output = '';
  const env = cleanEnv();
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    env: {
      ...env,
      PORT: String(port),
      DATA_DIR: dir,
      BOOTSTRAP_ADMIN_EMAIL: 'owner@start.test',
      BOOTSTRAP_ADMIN_PASSWORD: 'a strong first password',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  // npm passes SIGTERM on to the service and ends with it: a clean stop is exit 0 or that signal.
  const exited = new Promise<string>((resolve) =>
    child.on('exit', (code, signal) =>
      resolve(code === 0 || signal === 'SIGTERM' ? 'clean' : `code ${code} signal ${signal}`),
    ),
  );
  // The service inherits npm's pipes: they close only once every process holding them (npm, the service)
  // has exited and its last log line has been read.
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return { child, output: () => output, exited, closed };
}

async function waitReady(output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    // Its own line first: a probe alone would take another service's answer on the port for this one's.
    if (!output().includes('tessera listening on')) {
      await new Promise((r) => setTimeout(r, 250));
      continue;
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`not ready in time:\n${output()}`);
}

async function notListening(): Promise<boolean> {
  return fetch(`http://127.0.0.1:${port}/healthz`).then(
    () => false,
    () => true,
  );
}

/** A start on `dir` that becomes ready, then a SIGTERM that ends in a clean stop. */
async function expectStartsAndStops(dir: string): Promise<void> {
  const run = start(dir);
  await waitReady(run.output);
  run.child.kill('SIGTERM');
  await run.closed;
  expect(run.output()).toContain('"msg":"stopped"');
}

const dataDirs: string[] = [];
/** A DATA_DIR as `mktemp -d` makes it: mode 0700, which the postgres user cannot enter. */
async function freshDataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tessera-start-'));
  dataDirs.push(dir);
  return dir;
}

beforeAll(async () => {
  dataDir = await freshDataDir();
  port = await freePort();
});
afterAll(() => Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true }))));

describe('npm start on a machine without a database', () => {
  it('serves on PORT with an embedded PostgreSQL, shuts down on SIGTERM, and reuses its data on restart', async () => {
    const first = start();
    await waitReady(first.output);
    expect(first.output()).toContain('applied migration');
    expect(first.output()).toContain('created the operator organization');
    // The person at the terminal is told where to go, in plain lines beside the JSON log.
    expect(first.output()).toContain(`Sign in:       http://localhost:${port}/login`);
    expect(first.output()).toContain(`Admin portal:  http://localhost:${port}/admin/dashboard`);
    expect(first.output()).toContain(`GraphQL:       http://localhost:${port}/graphql`);
    expect(first.output()).toContain(`OpenAPI:       http://localhost:${port}/openapi.json`);
    expect(first.output()).toMatch(/Mail: +not configured \(set SMTP_URL\)/);

    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(await health.json()).toEqual({ status: 'ok' });
    const login = await fetch(`http://127.0.0.1:${port}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'owner@start.test', password: 'a strong first password' }),
    });
    expect(login.status).toBe(200);
    // The request's log line is written as the response ends: give the pipe a moment.
    const logLine = await waitFor(() =>
      first
        .output()
        .split('\n')
        .find((l) => l.includes('"path":"/api/v1/auth/login"')),
    );
    expect(JSON.parse(logLine)).toMatchObject({ method: 'POST', status: 200, requestId: expect.any(String) });

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe('clean');
    await first.closed;
    expect(first.output()).toContain('SIGTERM: shutting down');
    expect(await notListening()).toBe(true);

    const second = start();
    await waitReady(second.output);
    expect(second.output()).not.toContain('applied migration');
    expect(second.output()).not.toContain('created the operator organization');
    const again = await fetch(`http://127.0.0.1:${port}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'owner@start.test', password: 'a strong first password' }),
    });
    expect(again.status).toBe(200);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe('clean');
    await second.closed;
    expect(await notListening()).toBe(true);
  }, 120_000);

  it('stops cleanly on a SIGTERM that arrives while it is still starting, and starts again on the same data', async () => {
    const dir = await freshDataDir();
    const first = start(dir);
    await waitFor(
      () => (first.output().includes('creating the embedded PostgreSQL cluster') ? true : undefined),
      60_000,
    );
    first.child.kill('SIGTERM');
    await first.closed;
    expect(first.output()).toContain('SIGTERM: shutting down');
    expect(first.output()).toContain('"msg":"stopped"');

    // Had the database been left running, this start could not use DATA_DIR.
    await expectStartsAndStops(dir);
  }, 120_000);

  it('as root, runs its PostgreSQL below a folder that the postgres user could not traverse, and says what it changed', async () => {
    const parent = await freshDataDir();
    const dir = path.join(parent, 'data');
    const run = start(dir);
    await waitReady(run.output);
    run.child.kill('SIGTERM');
    await run.closed;
    expect(run.output()).toContain('"msg":"stopped"');
    if (process.getuid?.() === 0) {
      // Traversal (o+x) added, listing (o+r) not.
      expect((await stat(parent)).mode & 0o777).toBe(0o701);
      expect(run.output()).toContain(`granted traversal of ${parent} (chmod o+x)`);
    }
  }, 120_000);

  it('refuses a port in use with a clear message, and leaves no database running on DATA_DIR', async () => {
    const dir = await freshDataDir();
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(port, resolve));
    const blocked = start(dir);
    try {
      await blocked.closed;
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    expect(await blocked.exited).toBe('code 1 signal null');
    expect(blocked.output()).toContain(`tessera: port ${port} is in use`);

    await expectStartsAndStops(dir);
  }, 120_000);

  it('refuses a bad configuration with a message that says what to fix', async () => {
    const child = spawn('npm', ['start'], {
      cwd: ROOT,
      env: { ...cleanEnv(), PORT: 'eighty', DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).not.toBe(0);
    expect(err).toContain('PORT: must be a number');
  }, 60_000);
});
