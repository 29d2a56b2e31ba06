// Sign-in and sessions' refusals. Each keeps the stable code of its kind (unauthenticated) and the HTTP status that
// code maps to (docs/architecture.md#errors). A wrong password is the shared InvalidCredentialsError, and a locked
// counter the shared RateLimitedError (auth/throttle.service.ts).
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

/** The codes a UserError of this domain's mutations can carry (AuthErrorCode in schema.graphql). */
export const AUTH_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'sso_required',
  'sso_failed',
];
