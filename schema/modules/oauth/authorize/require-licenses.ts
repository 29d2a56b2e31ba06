// Step 11, continued: a product scope is granted only to a user who holds that license in the client's
// organization (docs/architecture.md#subscriptions-seats-and-licenses); load.ts read which of the asked ones the user
// holds. Checked once the user is known, so a signed-out browser is sent to sign in first.
import { InvalidScope } from '../oauth.errors.ts';
import { productScopesOf } from '../product-scopes.ts';
import type { AuthorizationRequest } from './request.ts';

export function requireLicenses(request: AuthorizationRequest, licensed: string[]): void {
  if (productScopesOf(request.scope).some((s) => !licensed.includes(s))) throw new InvalidScope();
}
