// Step 5: a scope is asked for, and every scope in it is one the client is allowed.
import { InvalidRequest, InvalidScope } from '../oauth.errors.ts';
import { parseScope } from '../scopes.ts';
import type { AuthorizeClient } from './request.ts';

export function checkScope(client: AuthorizeClient, p: Record<string, string>): string[] {
  const scope = parseScope(p.scope);
  if (scope.length === 0) throw new InvalidRequest('scope is required');
  if (scope.some((s) => !client.allowedScopes.includes(s))) throw new InvalidScope();
  return scope;
}
