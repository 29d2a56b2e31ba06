// Each kind of token has its own prefix (docs/architecture.md#identity-sessions-and-tokens), defined once: the test
// reads every definition in the service's source (a string literal that is a whole prefix, `'tss_'`), so a kind that
// borrows another's prefix, or a second definition of one, fails here, and so does the table going stale.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const SOURCE_DIRS = ['schema', 'server', 'worker', 'scripts', 'portal/src'];
const PREFIX_LITERAL = /(['"])((?:ts[a-z]{1,4}|whsec)_)\1/g;

/** Every place a prefix is written as a string literal: prefix -> `file:line`s. */
function prefixDefinitions(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const dir of SOURCE_DIRS) {
    for (const file of readdirSync(join(ROOT, dir), { recursive: true }) as string[]) {
      if (!/\.(ts|svelte)$/.test(file) || file.includes('generated')) continue;
      const path = join(dir, file);
      readFileSync(join(ROOT, path), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const [, , prefix] of line.matchAll(PREFIX_LITERAL))
            found.set(prefix!, [...(found.get(prefix!) ?? []), `${path}:${i + 1}`]);
        });
    }
  }
  return found;
}

/** The prefixes docs/architecture.md's table lists. */
function documentedPrefixes(): string[] {
  const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
  return [...doc.matchAll(/^\s*\| `([a-z]+_)`/gm)].map((m) => m[1]!);
}

describe('token prefixes', () => {
  const definitions = prefixDefinitions();

  it('are each defined once, so no two kinds share one', () => {
    const twice = [...definitions].filter(([, places]) => places.length > 1);
    expect(twice, 'define the prefix once and import it where the same kind is minted').toEqual([]);
    expect(definitions.size).toBeGreaterThanOrEqual(14);
  });

  it('are the ones docs/architecture.md lists, each once', () => {
    const documented = documentedPrefixes();
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...definitions.keys()].sort());
  });

  it('keep refresh tokens and reset links apart', () => {
    expect(definitions.has('tsr_') && definitions.has('tsp_')).toBe(true);
    expect(definitions.get('tsr_')![0]).toMatch(/refresh-token\.ts/);
    expect(definitions.get('tsp_')![0]).toMatch(/link-tokens\.ts/);
  });
});
