// A crash kills every process of the service at once (an OOM kill, a power cut): the next start on the same
// DATA_DIR comes back at once, with every committed write, although the dead PostgreSQL's processes are still
// dying. A crash of Tessera alone leaves its PostgreSQL running, orphaned: the next start stops it first. And a start
// beside a live Tessera on that DATA_DIR is refused in one line, its server left alone.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signIn } from '../helpers/http.ts';
import { waitFor } from '../helpers/wait.ts';
import { cleanEnv, freePort, NODE, ROOT, runToEnd } from './process.ts';

const ADMIN = { email: 'owner@crash.test', password: 'a strong first password' };
let dataDir: string;
let port: number;
let running: ChildProcess | undefined;

const env = () => ({
  ...cleanEnv(),
  PORT: String(port),
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
  BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
});
const url = () => `http://127.0.0.1:${port}`;

/** What the service started last has written (stdout and stderr). */
let output = '';

/** The service as `npm start` runs it, in a process group of its own, so that one signal reaches it and its PostgreSQL alike. */
function start(extra: Record<string, string> = {}): ChildProcess {
  output = '';
  running = spawn(NODE, ['server/main.ts'], {
    cwd: ROOT,
    env: { ...env(), ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  running.stdout!.on('data', (d) => (output += d));
  running.stderr!.on('data', (d) => (output += d));
  return running;
}

/** Every process of the service at once, as the kernel's OOM killer or a power cut would. */
function killAll(child: ChildProcess): void {
  process.kill(-child.pid!, 'SIGKILL');
}

const ready = () =>
  waitFor(
    () =>
      fetch(`${url()}/readyz`).then(
        (r) => (r.ok ? true : undefined),
        () => undefined,
      ),
    30_000,
  );

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-crash-restart-'));
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
  await rm(dataDir, { recursive: true, force: true });
});

describe('a crash of every process of the service', () => {
  it(
    'is followed by a start that is ready within 30 s with every committed write, ten times in a row',
    { timeout: 600_000 },
    async () => {
      const written: string[] = [];
      for (let round = 0; round < 10; round++) {
        // given a running service with connections open and busy
        const child = start({ LOG_LEVEL: 'info' });
        const startedAt = Date.now();
        await ready();
        expect(Date.now() - startedAt).toBeLessThan(30_000);
        // after a crash, the start found the dead server's lock and removed it once none of its processes was left
        if (round > 0)
          expect(output).toContain(
            'removed the lock file of an embedded PostgreSQL that had stopped without cleaning up',
          );
        const { api, login } = await signIn(url(), ADMIN.email, ADMIN.password);
        const organizations = (await api.get('/v1/organizations?limit=100')).body.organizations.map(
          (o: { name: string }) => o.name,
        );
        // then what every earlier round committed is there
        expect(organizations).toEqual(expect.arrayContaining(written));

        // when 30 connections are busy, a write commits, and every process dies while the 30 are still sending
        let answered = 0;
        let busy = true;
        const loops = Array.from({ length: 30 }, async () => {
          const caller = client(url(), { token: login.token });
          while (busy)
            await caller.get('/api/v1/users/me').then(
              () => answered++,
              () => undefined,
            );
        });
        await waitFor(() => (answered >= 60 ? true : undefined));
        const name = `Committed before crash ${round}`;
        const created = await api.post('/v1/organizations', { name });
        expect(created.status).toBe(201);
        written.push(name);
        killAll(child);
        busy = false;
        await Promise.all(loops);
      }
      const child = start();
      await ready();
      const { api } = await signIn(url(), ADMIN.email, ADMIN.password);
      expect(
        (await api.get('/v1/organizations?limit=100')).body.organizations.map((o: { name: string }) => o.name),
      ).toEqual(expect.arrayContaining(written));
      killAll(child);
    },
  );

  it('stops the PostgreSQL a killed Tessera left running (orphaned), then starts with every committed write', async () => {
    // given a running service with a committed write
    const child = start({ LOG_LEVEL: 'info' });
    await ready();
    const { api } = await signIn(url(), ADMIN.email, ADMIN.password);
    expect((await api.post('/v1/organizations', { name: 'Committed before the orphan' })).status).toBe(201);
    const postmaster = Number(
      (await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0],
    );
    // when only the Tessera process is killed: its PostgreSQL lives on, serving DATA_DIR with no Tessera
    process.kill(child.pid!, 'SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const parent = async () =>
      Number((await readFile(`/proc/${postmaster}/stat`, 'utf8')).split(') ')[1]!.split(' ')[1]);
    expect(await parent()).not.toBe(child.pid);
    // and a start follows at once
    const startedAt = Date.now();
    const next = start({ LOG_LEVEL: 'info' });
    await ready();
    expect(Date.now() - startedAt).toBeLessThan(30_000);
    // then it said it stopped the orphan, which is gone, and the write is there
    expect(output).toContain(`stopping an orphaned embedded PostgreSQL (PID ${postmaster})`);
    expect(
      await readFile(`/proc/${postmaster}/stat`, 'utf8').then(
        (stat) => stat.split(') ')[1]![0],
        () => 'gone',
      ),
    ).toMatch(/^(gone|Z)$/);
    const again = await signIn(url(), ADMIN.email, ADMIN.password);
    expect(
      (await again.api.get('/v1/organizations?limit=100')).body.organizations.map((o: { name: string }) => o.name),
    ).toContain('Committed before the orphan');
    killAll(next);
  });

  it('never takes the database of a live Tessera: a second start on its DATA_DIR is refused in one line', async () => {
    // given a Tessera running on DATA_DIR (after the crash above: it recovers first)
    const first = start();
    await ready();
    // when another starts on the same DATA_DIR, on another port
    const other = await runToEnd([NODE, 'server/main.ts'], { ...env(), PORT: String(await freePort()) });
    // then it stops with one line that says why, and the first keeps answering
    expect(other.code).not.toBe(0);
    expect(other.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^tessera: .*is another Tessera running on this DATA_DIR\?/),
    ]);
    expect((await fetch(`${url()}/readyz`)).status).toBe(200);
    const { api } = await signIn(url(), ADMIN.email, ADMIN.password);
    expect((await api.get('/api/v1/users/me')).status).toBe(200);
    killAll(first);
  });
});
