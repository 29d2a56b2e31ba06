// vitest.config.ts runs each worker's test files in one process (`isolate: false`). That is safe only while no
// test file replaces a module or changes the process's environment, which would leak into the files after it in
// the same worker. This keeps the rule from being broken silently.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const TEST_DIR = join(import.meta.dirname, '..');
const LEAKS = [
  { what: 'replaces a module', pattern: /\bvi\.(mock|doMock|stubGlobal|stubEnv)\(/ },
  {
    what: 'changes the environment',
    pattern: /(\bprocess\.env(\.\w+|\[[^\]]+\])\s*=(?!=)|\bdelete\s+process\.env\b|Object\.assign\(\s*process\.env\b)/,
  },
];

function leaksIn(source: string): string[] {
  return LEAKS.filter(({ pattern }) => pattern.test(source)).map(({ what }) => what);
}

describe('test files that share a worker process', () => {
  it('recognises a module mock and an environment change', () => {
    expect(leaksIn(`vi.mock('../x.ts');`)).toEqual(['replaces a module']);
    expect(leaksIn(`process.env.DATABASE_URL = url;`)).toEqual(['changes the environment']);
    expect(leaksIn(`process.env['PORT'] = '1';`)).toEqual(['changes the environment']);
    expect(leaksIn(`delete process.env.PORT;`)).toEqual(['changes the environment']);
    expect(leaksIn(`const url = process.env.DATABASE_URL; if (process.env.CI === 'true') {}`)).toEqual([]);
  });

  it('none mocks a module or changes the environment (else it needs `isolate` back in vitest.config.ts)', () => {
    // The test files and the helpers they import; global-setup.ts runs in vitest's own process, not in a worker.
    const files = readdirSync(TEST_DIR, { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.ts') && f !== 'global-setup.ts' && !f.endsWith('shared-workers.test.ts'),
    );
    expect(files.length).toBeGreaterThan(50);
    const offenders = files.flatMap((f) =>
      leaksIn(readFileSync(join(TEST_DIR, f), 'utf8')).map((what) => `${f} ${what}`),
    );
    expect(offenders).toEqual([]);
  });
});
