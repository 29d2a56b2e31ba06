// Sessions' refusals. Each keeps the stable code of its kind (unauthenticated) and the HTTP status that code maps to
// (docs/architecture.md#errors).
import { UnauthenticatedError } from '../../errors/index.ts';

/** What acts on the caller's own session: an API key or an access token has none. */
export class SessionRequiredError extends UnauthenticatedError {
  constructor(
    what: 'Sign-out' | 'Switching organization' | 'Managing sessions' | 'Managing second factors' | 'Managing passkeys',
  ) {
    super(`${what} needs a session`);
  }
}
