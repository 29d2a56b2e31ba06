// Sign-in's own refusals: the organizations' sign-in policy (admitSignIn). A wrong password is the shared
// InvalidCredentialsError, and a locked counter the shared RateLimitedError (throttle.service.ts).
import { UserError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/**
 * A password (or a passkey) for an address whose organization requires single sign-on: the message says where to
 * sign in instead; `connectionId` lets the sign-in page send the person there.
 */
export class SsoRequiredError extends UserError {
  static readonly code = 'sso_required';
  readonly connectionId: string;
  constructor(connection: { id: string; name: string }) {
    super(SsoRequiredError.code, `Your organization requires you to sign in with ${connection.name}`, [
      { path: 'connection', message: connection.id },
    ]);
    this.connectionId = connection.id;
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
