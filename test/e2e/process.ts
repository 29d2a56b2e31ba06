// Running the real service as a child process, as an operator would.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ADMIN } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';

export const ROOT = path.resolve(import.meta.dirname, '../..');
/** Node 24 from the registry (the shell's `node` may be older); `npm start` runs the same binary. */
export const NODE = path.join(ROOT, 'node_modules/.bin/node');

/** Where the kernel picks ports for `listen(0)` and outgoing connections (Linux's default if unreadable). */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low && high) return [low, high];
  } catch {
    // not Linux
  }
  return [32768, 60999];
}

/** A free port for a child service that binds it later. Taken below the ephemeral range: a port `listen(0)` had
 *  given and released would be handed to the next test file's server that listens on 0, while the child is
 *  still starting (CI once saw the child refuse its port, and another service answer its readiness probe). */
export async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  const floor = 10_000;
  for (;;) {
    const candidate = floor + Math.floor(Math.random() * (low - floor));
    if (await canListen(candidate)) return candidate;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** The shell's environment, less what vitest adds (it sets BASE_URL=/ for Vite) and any database URL or key. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of ['DATABASE_URL', 'BASE_URL', 'MODE', 'DEV', 'PROD', 'SSR', 'NODE_ENV', 'SECRET_KEY'])
    delete env[key];
  return env;
}

export interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` to its end (a start that fails), with `env` over the clean environment. */
export function runToEnd(command: string[], env: NodeJS.ProcessEnv): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), {
      cwd: ROOT,
      env: { ...cleanEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** One process of the service, run as an operator runs it: its role, its port (API, all) and the child running it now. */
export interface ServiceNode {
  name: string;
  role: 'api' | 'worker' | 'all';
  port: number;
  url: string;
  child?: ChildProcess;
  exited?: Promise<number | null>;
  /** The last lines it wrote, shown when it does not come up. */
  output: string[];
}

export const serviceNode = (name: string, role: ServiceNode['role'], port = 0): ServiceNode => ({
  name,
  role,
  port,
  url: `http://127.0.0.1:${port}`,
  output: [],
});

/**
 * What every process of one deployment is given alike: one database, SECRET_KEY, BASE_URL and data folder, the
 * bootstrap admin, webhook receivers on this machine trusted through `caFile`, and an organization's hourly limit out
 * of the way (these tests load one organization; its limit is not what they look at).
 */
export function deploymentEnv(d: {
  databaseUrl: string;
  secretKey: string;
  baseUrl: string;
  dataDir: string;
  caFile: string;
}): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: d.databaseUrl,
    SECRET_KEY: d.secretKey,
    BASE_URL: d.baseUrl,
    DATA_DIR: d.dataDir,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    RATE_LIMIT_ORGANIZATION_PER_HOUR: '1000000',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_CA_FILE: d.caFile,
  };
}

/**
 * Starts `n` as `npm start` would, with `env` over the clean environment (and its role and port), in a process
 * group of its own, so that one signal reaches all of it. `root` is the checkout it runs from: this one, or another
 * release's (test/e2e/upgrade.test.ts), with the Node 24 of that checkout's node_modules.
 */
export function startNode(n: ServiceNode, env: NodeJS.ProcessEnv, root = ROOT): void {
  const child = spawn(path.join(root, 'node_modules/.bin/node'), ['server/main.ts'], {
    cwd: root,
    env: { ...cleanEnv(), ...env, ROLE: n.role, ...(n.role === 'worker' ? {} : { PORT: String(n.port) }) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  n.output = [];
  const keep = (chunk: Buffer) => {
    n.output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    n.output.splice(0, Math.max(0, n.output.length - 50));
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  n.child = child;
  n.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Until the process answers /readyz: the database answers and every migration is applied. */
export async function nodeReady(n: ServiceNode, ms = 30_000): Promise<void> {
  await waitFor(
    () =>
      fetch(`${n.url}/readyz`).then(
        (r) => (r.ok ? true : undefined),
        () => undefined,
      ),
    ms,
  ).catch((error: Error) => {
    throw new Error(`${n.name} not ready: ${error.message}\n${n.output.join('\n')}`);
  });
}

/** Sends `name` to every process of `n`'s group and waits for it to end; returns the exit code. */
export async function signalNode(n: ServiceNode, name: NodeJS.Signals): Promise<number | null> {
  if (!n.child?.pid || !n.exited) throw new Error(`${n.name} was never started`);
  process.kill(-n.child.pid, name);
  return n.exited;
}
