// Refusals of passkeys (docs/architecture.md#second-factors). Each keeps a stable code; a code the table in
// server/errors/http.ts does not name answers 400, the rest the status of their kind.
import { ConflictError, InvalidCredentialsError, UserError, ValidationError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/**
 * BASE_URL's host is an IP address: browsers refuse it as a relying-party id (WebAuthn Level 3, 5.1.3 and 5.1.4.1
 * require a valid domain), so passkeys are offered nowhere on this deployment.
 */
export class PasskeysUnavailableError extends UserError {
  static readonly code = 'passkeys_unavailable';
  constructor() {
    super(
      PasskeysUnavailableError.code,
      'Passkeys are not available here: the service must be reached by a domain name (BASE_URL), not an IP address',
    );
  }
}

/**
 * The challenge the answer signed is unknown, already used, past its 5 minutes, or was given for another purpose or
 * person: the same answer for each, and the ceremony starts again with new options.
 */
export class InvalidChallengeError extends UserError {
  static readonly code = 'invalid_challenge';
  constructor() {
    super(InvalidChallengeError.code, 'This passkey request has expired or was already used: start again', [
      { path: 'response', message: 'answers no open passkey request' },
    ]);
  }
}

/** The answer is not a WebAuthn answer we can check, or it does not verify (signature, origin, relying party). */
export class InvalidPasskeyResponseError extends ValidationError {
  constructor(reason = 'could not be verified') {
    super('The passkey answer could not be verified', [{ path: 'response', message: reason }]);
  }
}

/** A sign-in with a credential no account has registered (or one removed since). */
export class UnknownPasskeyError extends InvalidCredentialsError {
  constructor() {
    super('This passkey is not registered here');
  }
}

/**
 * The authenticator's signature counter did not grow: the credential may have been cloned (WebAuthn Level 3,
 * 6.1.1). Refused and audited; the person can remove the passkey and register a new one.
 */
export class PasskeyCounterError extends UserError {
  static readonly code = 'passkey_counter_mismatch';
  constructor() {
    super(
      PasskeyCounterError.code,
      'This passkey reported a use count lower than before, as a copied key would: sign in another way and replace it',
    );
  }
}

export class PasskeyAlreadyRegisteredError extends ConflictError {
  constructor() {
    super('This passkey is already registered');
  }
}

/** Removing a passkey needs the account's password, and the one given is wrong (counted by the sign-in throttle). */
export class WrongPasswordError extends InvalidCredentialsError {
  constructor() {
    super('The password is wrong');
  }
}

/** The codes a UserError of this domain's mutations can carry (PasskeysErrorCode in schema.graphql). */
export const PASSKEYS_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'sso_required',
  'sso_failed',
  'passkeys_unavailable',
  'invalid_challenge',
  'passkey_counter_mismatch',
];
