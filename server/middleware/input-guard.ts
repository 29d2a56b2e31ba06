// Input no operation can accept, refused at the door of every interface (REST, GraphQL, the portal bridge, OAuth,
// SCIM, single sign-on): each asks here, and only the words of its refusal are its own. What cannot be stored is
// schema/lib/storable.ts's rule.
import { ValidationError, type FieldProblem } from '../../schema/errors/index.ts';
import { unstorableInput, type InputRoots } from '../../schema/lib/storable.ts';

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
