// What a process holds at rest (docs/architecture.md#configuration-and-processes): each role loads only its own half, what few deployments
// use (SAML, OpenID Connect upstreams, QR codes, passkeys, SMTP, OpenTelemetry, Prometheus) waits for its first use,
// and whatever launches the process, V8's young generation is capped and Node's compile cache is on
// (server/process-shape.ts). Each process is started as `node server/main.ts`
// with no flag, as ../shared/bench and most launchers do, with test/e2e/loaded-modules.ts preloaded to list the files
// it has loaded.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';
import { freePort, nodeReady, ROOT, serviceNode, signalNode, startNode, type ServiceNode } from './process.ts';

/** One deployment: every process is given the same key. */
const SECRET_KEY = randomBytes(32).toString('hex');
const PRELOAD = `--import=${path.join(ROOT, 'test/e2e/loaded-modules.ts')}`;
/** Loaded only when used or configured; none is, in these processes. */
const ON_FIRST_USE = [
  '@node-saml/node-saml',
  'xml-crypto',
  'openid-client',
  'qrcode',
  '@simplewebauthn/server',
  'nodemailer',
  '@opentelemetry/sdk-trace',
  'prom-client',
];
/** The API's half: a worker holds none of it. */
const API_ONLY = ['graphql-yoga', 'koa', '@koa/router', 'portal/build', 'server/app.ts'];

let work: string;
let database: TestDatabase;
const started: ServiceNode[] = [];

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'tessera-footprint-'));
  database = await createTestDatabase();
});

afterAll(async () => {
  await Promise.all(started.filter((n) => n.child?.exitCode === null).map((n) => signalNode(n, 'SIGTERM')));
  await database?.drop();
  await rm(work, { recursive: true, force: true });
});

/** Starts a process of `role` with `nodeOptions`, and waits until it has started all it starts. */
async function start(
  role: ServiceNode['role'],
  nodeOptions: string,
  env: NodeJS.ProcessEnv = {},
): Promise<ServiceNode> {
  const n = serviceNode(role, role, role === 'api' ? await freePort() : 0);
  started.push(n);
  startNode(n, {
    DATABASE_URL: database.url,
    SECRET_KEY,
    DATA_DIR: work,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    NODE_OPTIONS: nodeOptions,
    LOADED_MODULES_FILE: path.join(work, `${role}-${started.length}.json`),
    ...env,
  });
  if (role === 'api') await nodeReady(n);
  // A worker's start ends with this line, written once its job queue runs (server/start.ts).
  else await waitFor(() => n.output.some((line) => line.includes('no SMTP_URL')) || undefined, 30_000);
  return n;
}

/** The files `n` has loaded, relative to the checkout. */
async function loadedBy(n: ServiceNode): Promise<string[]> {
  const file = path.join(work, `${n.role}-${started.indexOf(n) + 1}.json`);
  await rm(file, { force: true });
  process.kill(n.child?.pid ?? 0, 'SIGUSR2');
  const text = await waitFor(() => readFile(file, 'utf8').catch(() => undefined), 10_000);
  return (JSON.parse(text) as string[]).map((f) => path.relative(ROOT, f));
}

const holds = (files: string[], name: string) =>
  files.some((f) => f.startsWith(`node_modules/${name}/`) || f === name || f.startsWith(`${name}/`));

const youngGeneration = async (n: ServiceNode) =>
  (await readFile(`/proc/${n.child?.pid}/cmdline`, 'utf8')).split('\0').filter((a) => a.includes('semi-space'));
const compileCache = async (n: ServiceNode) =>
  (await readFile(`/proc/${n.child?.pid}/environ`, 'utf8'))
    .split('\0')
    .find((v) => v.startsWith('NODE_COMPILE_CACHE='))
    ?.slice('NODE_COMPILE_CACHE='.length);
const CACHE = path.join(ROOT, 'node_modules/.cache/node-compile-cache');

describe('a process at rest', () => {
  it('serving the API holds GraphQL, Koa and the portal, and nothing that waits for its first use', async () => {
    const api = await start('api', PRELOAD);
    const files = await loadedBy(api);
    for (const name of API_ONLY) expect(holds(files, name), name).toBe(true);
    for (const name of ON_FIRST_USE) expect(holds(files, name), name).toBe(false);
    // The same pid, replaced by a process with the cap and the cache, which its start has written.
    expect(await youngGeneration(api)).toEqual(['--max-semi-space-size=8']);
    expect(await compileCache(api)).toBe(CACHE);
    const written = await readdir(CACHE, { recursive: true, withFileTypes: true });
    expect(written.filter((entry) => entry.isFile()).length).toBeGreaterThan(100);
  });

  it('running jobs holds the job runner and none of the API', async () => {
    const worker = await start('worker', PRELOAD);
    const files = await loadedBy(worker);
    expect(holds(files, 'graphile-worker')).toBe(true);
    expect(holds(files, 'worker/tasks/webhook-deliver.ts')).toBe(true);
    for (const name of [...API_ONLY, ...ON_FIRST_USE]) expect(holds(files, name), name).toBe(false);
    expect(await youngGeneration(worker)).toEqual(['--max-semi-space-size=8']);
  });

  it("keeps an operator's own young generation and compile cache", async () => {
    const cache = path.join(work, 'cache');
    const api = await start('api', `${PRELOAD} --max-semi-space-size=32`, { NODE_COMPILE_CACHE: cache });
    // Not replaced: its command line has no flag of ours (V8 took the operator's from NODE_OPTIONS).
    expect(await youngGeneration(api)).toEqual([]);
    expect(await compileCache(api)).toBe(cache);
    expect((await readdir(cache)).length).toBeGreaterThan(0);
  });
});
