// Sign-in's own refusals: the organizations' sign-in policy (admitSignIn). A wrong password is the shared
// InvalidCredentialsError, and a locked counter the shared RateLimitedError (throttle.service.ts).
import { UserError } from '../../errors/index.ts';

/**
 * A password (or a passkey) for an address whose organization requires single sign-on: the message says where to
 * sign in instead; `connectionId` lets the sign-in page send the person there.
 */
export class SsoRequiredError extends UserError {
  readonly connectionId: string;
  constructor(connection: { id: string; name: string }) {
    super('sso_required', `Your organization requires you to sign in with ${connection.name}`, [
      { path: 'connection', message: connection.id },
    ]);
    this.connectionId = connection.id;
  }
}
