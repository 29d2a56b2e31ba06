// What no column of Tessera can hold (docs/architecture.md#errors): a NUL, a lone surrogate, or nesting past any
// input of ours. The interfaces refuse it at their door (server/middleware/input-guard.ts); what Tessera fetches
// itself (a client ID metadata document) is read by the same rules.
import type { FieldProblem } from '../errors/index.ts';

const NUL = '\u0000';
const MAX_DEPTH = 32;
const NUL_MESSAGE = 'must not contain NUL (U+0000) characters';
const SURROGATE_MESSAGE = 'must be well-formed Unicode: a lone surrogate (U+D800 to U+DFFF) cannot be stored';

/** Values to walk, each with the path its problems are named under ('' names a body's own fields bare). */
export type InputRoots = [value: unknown, path: string][];

/**
 * Problems no operation could accept, found in one walk (a queue, not recursion: the depth is the sender's):
 * a NUL anywhere, which PostgreSQL text and JSON columns cannot hold (it would fail in the database, a 500);
 * a lone surrogate (JSON can carry "\udfff"), which a JSON column refuses and a text column would silently store
 * as U+FFFD; and nesting deeper than any input of ours goes.
 */
export function unstorableInput(roots: InputRoots): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const join = (path: string, key: string) => (path ? `${path}.${key}` : key);
  const queue: [unknown, string, number][] = roots.map(([value, path]) => [value, path, 0]);
  // An array's iterator reads its length at each step, so it reaches what the walk pushes.
  for (const [value, path, depth] of queue) {
    if (typeof value === 'string') {
      const message = textProblem(value);
      if (message) problems.push({ path, message });
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_DEPTH) {
      problems.push({ path, message: `is nested more than ${MAX_DEPTH} levels deep` });
      continue;
    }
    for (const [key, v] of Object.entries(value)) {
      const message = textProblem(key);
      if (message) problems.push({ path: join(path, key.replaceAll(NUL, '\\u0000').toWellFormed()), message });
      else queue.push([v, join(path, key), depth + 1]);
    }
  }
  return problems;
}

/** Why a string cannot be stored (a NUL, a lone surrogate), or null. */
export function textProblem(text: string): string | null {
  if (text.includes(NUL)) return NUL_MESSAGE;
  return text.isWellFormed() ? null : SURROGATE_MESSAGE;
}
