// Upgrades without downtime (docs/architecture.md#writing-migrations): migrations are expand-then-contract, so the
// previous release keeps answering while this one migrates its database and starts beside it. The previous release
// is built from a git worktree of a fixed commit, started as ROLE=api on a fresh database (it migrates it to its own
// schema), and given an organization, a member and a client through its own HTTP API. Under a steady trickle of
// password sign-ins, code exchanges, refreshes and userinfo calls at it, this checkout's `npm run db:migrate` runs and
// this checkout's API starts on the same database: every answer of the previous release is what it should be, before,
// during and after, and the new API serves the same people, tokens issued by the previous release included.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, symlink, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { client, signIn } from '../helpers/http.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { browserGet, registerClient, tokenRequest, type RegisteredClient } from '../helpers/oauth.ts';
import { ADMIN } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import {
  cleanEnv,
  deploymentEnv,
  freePort,
  nodeReady,
  ROOT,
  runToEnd,
  serviceNode,
  startNode,
  type ServiceNode,
} from './process.ts';

const run = promisify(execFile);

/**
 * The previous release: the parent of 67352e1, the last commit before the newest migrations (the retention indexes).
 * A fixed commit, as the repository has no release tags yet; move it forward to the last release when there is one.
 * CI runs from a full `git clone`, which has it.
 */
const PREVIOUS_RELEASE = 'e9644379609e22de452bbdc30ff4e4d11c0af088';

const SECRET_KEY = randomBytes(32).toString('hex');
const BASE_URL = 'http://id.tessera.test';
const REDIRECT = 'https://app.example.test/callback';
/** Two callers at once: enough that requests overlap the migration, few enough to keep the test short. */
const CALLERS = 2;

let work: string;
/** The previous release's checkout (a detached git worktree under `work`). */
let previous: string;
let database: TestDatabase;
let ca: TestCa;
let older: ServiceNode;
let newer: ServiceNode;
let tenant: Tenant;
let app: RegisteredClient;

const git = (...args: string[]) => run('git', ['-C', ROOT, ...args], { env: cleanEnv() });

/**
 * The previous release made runnable: its checkout, its node_modules, and what its `npm ci` would generate that the
 * API needs. When its package-lock.json is this checkout's, its node_modules would be the same files, so they are
 * linked instead of installed; otherwise they are installed from its lock (install scripts off: nothing it runs here
 * needs one). Its postinstall also builds the portal: that is skipped, since the requests under test (OAuth and REST)
 * do not pass through the portal, which the API then reports as not built. The Prisma client is generated into the
 * tree (prisma/generated), so it is generated for the previous release's own schema.
 */
async function checkOutPreviousRelease(): Promise<void> {
  await git('cat-file', '-e', `${PREVIOUS_RELEASE}^{commit}`).catch(() => {
    throw new Error(
      `commit ${PREVIOUS_RELEASE} (the previous release) is not in this repository: the upgrade test needs its history (a full clone, or git fetch --unshallow)`,
    );
  });
  await git('worktree', 'add', '--detach', previous, PREVIOUS_RELEASE);
  const [ours, theirs] = await Promise.all(
    [ROOT, previous].map((root) => readFile(path.join(root, 'package-lock.json'), 'utf8')),
  );
  const env = { ...cleanEnv(), PATH: `${path.join(previous, 'node_modules/.bin')}:${process.env.PATH}` };
  if (ours === theirs) await symlink(path.join(ROOT, 'node_modules'), path.join(previous, 'node_modules'), 'dir');
  else await run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: previous, env });
  // prisma's bin runs on the `node` first on the PATH: the previous release's Node 24, as under `npm run`.
  await run('prisma', ['generate'], { cwd: previous, env });
}

/** The node_modules link first, so that removing the worktree cannot reach into this checkout's. */
async function removePreviousRelease(): Promise<void> {
  await unlink(path.join(previous, 'node_modules')).catch(() => {});
  await git('worktree', 'remove', '--force', previous).catch(() => {});
  await git('worktree', 'prune').catch(() => {});
}

/** The migrations a checkout has, by name. */
const migrationsOf = async (root: string) =>
  (await readdir(path.join(root, 'prisma/migrations'), { withFileTypes: true }))
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();

function start(n: ServiceNode, root: string): void {
  startNode(
    n,
    deploymentEnv({
      databaseUrl: database.url,
      secretKey: SECRET_KEY,
      baseUrl: BASE_URL,
      dataDir: path.join(work, 'data'),
      caFile: ca.caFile,
    }),
    root,
  );
}

/** One request a caller made, and whether its answer was the one it should be. */
interface Answer {
  at: string;
  step: string;
  ok: boolean;
  status: number | string;
  started: number;
  ended: number;
  detail?: string;
}

/** Sends one request and records its answer; returns what `read` takes from it, or undefined when it failed. */
async function step<R extends { status: number }, T>(
  answers: Answer[],
  at: ServiceNode,
  name: string,
  send: () => Promise<R>,
  read: (reply: R) => T | undefined,
): Promise<T | undefined> {
  const started = Date.now();
  try {
    const reply = await send();
    const value = read(reply);
    const detail = value === undefined ? JSON.stringify((reply as { body?: unknown }).body ?? '') : undefined;
    answers.push({
      at: at.name,
      step: name,
      ok: value !== undefined,
      status: reply.status,
      started,
      ended: Date.now(),
      detail,
    });
    return value;
  } catch (error) {
    answers.push({
      at: at.name,
      step: name,
      ok: false,
      status: 'no answer',
      started,
      ended: Date.now(),
      detail: String(error),
    });
    return undefined;
  }
}

const ok = (status: number) => status >= 200 && status < 300;

/** The tokens of the last round that got them: the new API is later shown those the previous release issued. */
interface Tokens {
  access_token: string;
  refresh_token: string;
}

/**
 * One round of what a relying party and its users do, at `at`: a password sign-in, the signed-in browser's trip to
 * the authorization endpoint (a 302 back to the client with a code), the code's exchange, a refresh, userinfo with the
 * refreshed access token, and the load balancer's /readyz.
 */
async function round(at: ServiceNode, answers: Answer[]): Promise<Tokens | undefined> {
  const session = await step(
    answers,
    at,
    'sign-in',
    () => client(at.url).post('/api/v1/auth/login', { email: tenant.member.email, password: PASSWORD }),
    (r) => (ok(r.status) ? (r.body.token as string) : undefined),
  );
  await step(
    answers,
    at,
    'readyz',
    () => fetch(`${at.url}/readyz`),
    (r) => (ok(r.status) ? true : undefined),
  );
  if (!session) return undefined;
  const code = await step(
    answers,
    at,
    'authorize',
    () =>
      browserGet(
        new URL(
          `/oauth/authorize?${new URLSearchParams({
            client_id: app.client_id,
            redirect_uri: REDIRECT,
            response_type: 'code',
            scope: 'openid email offline_access',
            state: randomBytes(4).toString('hex'),
            nonce: 'n',
          })}`,
          at.url,
        ),
        session,
      ),
    (r) =>
      r.status === 302
        ? (new URL(r.headers.get('location') ?? '', at.url).searchParams.get('code') ?? undefined)
        : undefined,
  );
  if (!code) return undefined;
  const issued = await step(
    answers,
    at,
    'code exchange',
    () =>
      tokenRequest(at.url, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        client_id: app.client_id,
        client_secret: app.client_secret,
      }),
    (r) => (ok(r.status) && r.body.refresh_token ? (r.body as Tokens) : undefined),
  );
  if (!issued) return undefined;
  const refreshed = await refresh(at, answers, issued);
  if (!refreshed) return undefined;
  const info = await userinfo(at, answers, refreshed);
  return info ? refreshed : undefined;
}

const refresh = (at: ServiceNode, answers: Answer[], tokens: Tokens) =>
  step(
    answers,
    at,
    'refresh',
    () =>
      tokenRequest(at.url, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: app.client_id,
        client_secret: app.client_secret,
      }),
    (r) => (ok(r.status) && r.body.refresh_token ? (r.body as Tokens) : undefined),
  );

const userinfo = (at: ServiceNode, answers: Answer[], tokens: Tokens) =>
  step(
    answers,
    at,
    'userinfo',
    () => client(at.url, { token: tokens.access_token }).get('/oauth/userinfo'),
    (r) => (ok(r.status) && r.body.sub === tenant.member.id ? true : undefined),
  );

/** The answers that overlap [from, to]: sent before it ended, answered after it began. */
const during = (answers: Answer[], from: number, to: number) =>
  answers.filter((a) => a.started <= to && a.ended >= from);

const failuresOf = (answers: Answer[]) =>
  answers.filter((a) => !a.ok).map((a) => `${a.at} ${a.step}: ${a.status} ${a.detail ?? ''}`);

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'tessera-upgrade-'));
  previous = path.join(work, 'previous');
  ca = makeTestCa(['localhost']);
  older = serviceNode('previous release', 'api', await freePort());
  newer = serviceNode('this release', 'api', await freePort());
  [database] = await Promise.all([createTestDatabase({ empty: true }), checkOutPreviousRelease()]);
  // The previous release's API on the empty database: its start applies its own migrations.
  start(older, previous);
  await nodeReady(older);
  const platform = (await signIn(older.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(older.url, platform);
  app = await registerClient(platform, {
    name: 'Relying party',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email', 'offline_access'],
    consent_required: false,
    organization_id: tenant.id,
  });
});

afterAll(async () => {
  for (const n of [older, newer]) {
    if (n?.child?.pid && n.child.exitCode === null && n.child.signalCode === null) {
      try {
        process.kill(-n.child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  await Promise.all([older, newer].flatMap((n) => (n?.exited ? [n.exited] : [])));
  await database?.drop();
  if (previous) await removePreviousRelease();
  ca?.remove();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('an upgrade from the previous release', () => {
  it("fails none of the previous release's requests while this release migrates and starts beside it", async () => {
    // given the previous release's API on its own schema, with a caller signing in and using tokens at it
    const theirs = new Set(await migrationsOf(previous));
    const added = (await migrationsOf(ROOT)).filter((name) => !theirs.has(name));
    expect(
      added.length,
      'this release adds no migration to the previous one: move PREVIOUS_RELEASE on',
    ).toBeGreaterThan(0);
    const answers: Answer[] = [];
    const lastTokens: Tokens[] = [];
    let running = true;
    const caller = async () => {
      while (running) {
        const tokens = await round(older, answers);
        if (tokens) lastTokens.push(tokens);
      }
    };
    const callers = Array.from({ length: CALLERS }, caller);
    const rounds = () => answers.filter((a) => a.step === 'userinfo').length;
    const migration = { from: 0, to: 0 };
    const newStart = { from: 0, to: 0 };
    try {
      await waitFor(() => (rounds() >= CALLERS ? true : undefined), 30_000);

      // when this release's migrations run against the database
      migration.from = Date.now();
      const migrated = await runToEnd(['npm', 'run', '--silent', 'db:migrate'], {
        DATABASE_URL: database.url,
        DATA_DIR: path.join(work, 'data'),
        LOG_LEVEL: 'warn',
      });
      migration.to = Date.now();
      expect(migrated.code, migrated.stdout + migrated.stderr).toBe(0);
      for (const name of added) expect(migrated.stdout).toContain(`applied migration ${name}`);

      // and this release's API starts beside the previous one
      newStart.from = Date.now();
      start(newer, ROOT);
      await nodeReady(newer);
      newStart.to = Date.now();
      const seen = rounds();
      await waitFor(() => (rounds() >= seen + CALLERS ? true : undefined), 30_000);
    } finally {
      running = false;
      await Promise.all(callers);
    }

    // then the previous release answered every request as it should, before, during and after
    // A failure shows what the previous release logged last (its errors say why it answered 500).
    expect(failuresOf(answers), older.output.join('\n')).toEqual([]);
    expect(during(answers, migration.from, migration.to).length, 'requests during the migration').toBeGreaterThan(0);
    expect(during(answers, newStart.from, newStart.to).length, "requests during the new API's start").toBeGreaterThan(
      0,
    );

    // and this release's API serves the same people: a round of its own, and the tokens the previous one issued
    const atNewer: Answer[] = [];
    expect(await round(newer, atNewer), JSON.stringify(failuresOf(atNewer))).toBeDefined();
    const handedOver = lastTokens.at(-1)!;
    expect(await userinfo(newer, atNewer, handedOver)).toBe(true);
    expect(await refresh(newer, atNewer, handedOver)).toBeDefined();
    expect(failuresOf(atNewer)).toEqual([]);
  });
});
