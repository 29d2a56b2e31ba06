// Sessions' refusals. Each keeps the stable code of its kind (unauthenticated) and the HTTP status that code maps to
// (docs/architecture.md#errors).
import { UnauthenticatedError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** What acts on the caller's own session: an API key or an access token has none. */
export class SessionRequiredError extends UnauthenticatedError {
  constructor(
    what: 'Sign-out' | 'Switching organization' | 'Managing sessions' | 'Managing second factors' | 'Managing passkeys',
  ) {
    super(`${what} needs a session`);
  }
}

/** The codes a UserError of this domain's mutations can carry (SessionsErrorCode in schema.graphql). */
export const SESSIONS_ERROR_CODES: readonly UserErrorCode[] = ['invalid_request', 'conflict'];
