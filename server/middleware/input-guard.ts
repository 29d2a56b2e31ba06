// Input no operation can accept, refused at the door of every interface (REST, GraphQL, the portal bridge, OAuth,
// SCIM, single sign-on): each asks here, and only the words of its refusal are its own.
import { ValidationError, type FieldProblem } from '../../schema/errors/index.ts';

const NUL = '\u0000';
const MAX_DEPTH = 32;
const NUL_MESSAGE = 'must not contain NUL (U+0000) characters';
const SURROGATE_MESSAGE = 'must be well-formed Unicode: a lone surrogate (U+D800 to U+DFFF) cannot be stored';

/** Values to walk, each with the path its problems are named under ('' names a body's own fields bare). */
type InputRoots = [value: unknown, path: string][];

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

const invalidRequest = (problems: FieldProblem[]) => new ValidationError('The request is invalid', problems);

/**
 * The API's refusal of input that cannot be stored, or null: 400 invalid_request naming every field, as REST,
 * GraphQL and the single sign-on steps answer it. For a caller that answers it rather than throwing (the executor,
 * yoga's plugin).
 */
export function unstorableRefusal(roots: InputRoots): ValidationError | null {
  const problems = unstorableInput(roots);
  return problems.length ? invalidRequest(problems) : null;
}

/**
 * Passes input that can be stored; else throws the API's refusal (unstorableRefusal), or `refuse`'s words for the
 * first problem where a protocol has its own error (OAuth's invalid_request, SCIM's invalidValue).
 */
export function requireStorable(roots: InputRoots, refuse?: (problem: FieldProblem) => Error): void {
  const problems = unstorableInput(roots);
  const [first] = problems;
  if (first) throw refuse ? refuse(first) : invalidRequest(problems);
}
