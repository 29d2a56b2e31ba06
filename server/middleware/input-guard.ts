// Input no operation can accept, refused at the door of every interface (REST, GraphQL, the portal bridge).
import type { FieldProblem } from '../../schema/errors/index.ts';

const NUL = '\u0000';
const MAX_DEPTH = 32;
const NUL_MESSAGE = 'must not contain NUL (U+0000) characters';

/**
 * Problems no operation could accept, found in one walk (a queue, not recursion: the depth is the sender's):
 * a NUL anywhere, which PostgreSQL text and JSON columns cannot hold (it would fail in the database, a 500),
 * and nesting deeper than any input of ours goes.
 */
export function unstorableInput(roots: [value: unknown, path: string][]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const join = (path: string, key: string) => (path ? `${path}.${key}` : key);
  const queue: [unknown, string, number][] = roots.map(([value, path]) => [value, path, 0]);
  for (let i = 0; i < queue.length; i++) {
    const [value, path, depth] = queue[i]!;
    if (typeof value === 'string' && value.includes(NUL)) problems.push({ path, message: NUL_MESSAGE });
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_DEPTH) {
      problems.push({ path, message: `is nested more than ${MAX_DEPTH} levels deep` });
      continue;
    }
    for (const [key, v] of Object.entries(value)) {
      if (key.includes(NUL)) problems.push({ path: join(path, key.replaceAll(NUL, '\\u0000')), message: NUL_MESSAGE });
      else queue.push([v, join(path, key), depth + 1]);
    }
  }
  return problems;
}
