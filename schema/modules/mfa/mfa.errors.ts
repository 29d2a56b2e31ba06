// Refusals of the second factors (docs/architecture.md#second-factors).
import { ConflictError, InvalidCredentialsError, ValidationError } from '../../errors/index.ts';
import type { FoundLock } from '../auth/throttle.service.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** A code that is wrong, from outside its window, or already used: the same answer for each. */
export class InvalidCodeError extends InvalidCredentialsError {
  constructor(what: 'code' | 'recovery code' | 'password' = 'code') {
    super(`Invalid ${what}`);
  }
}

/** An unknown mfa_token, or one used or past its 5 minutes: sign in again. */
export class InvalidMfaTokenError extends ValidationError {
  constructor() {
    super('This sign-in has expired or was already completed: sign in again', [
      { path: 'mfaToken', message: 'is not a valid sign-in in progress' },
    ]);
  }
}

export class TotpAlreadyEnabledError extends ConflictError {
  constructor() {
    super('An authenticator app is already set up: remove it first to set up another');
  }
}

export class NoPendingTotpError extends ConflictError {
  constructor() {
    super('No authenticator app is being set up: start again');
  }
}

/** The last second factor of a member of an organization that requires one: removing it would shut them out. */
export class FactorRequiredError extends ConflictError {
  constructor(organization: string) {
    super(`${organization} requires a second factor: set up another one before removing this one`);
  }
}

export class NoSecondFactorError extends ConflictError {
  constructor() {
    super('Set up an authenticator app first: recovery codes stand in for it');
  }
}

/**
 * A change at the account's level (removing a factor, a first factor, deleting the account) needs the password, or a
 * code, given with it; an account that signs in through its identity provider may sign in again instead.
 */
export class FreshProofRequiredError extends ValidationError {
  constructor() {
    super(
      'Confirm with your password or a code from your authenticator app (if you sign in through your organization, sign in again first)',
      [{ path: 'password', message: 'or a code is required' }],
    );
  }
}

/**
 * The second factor's throttle holds a lock on this sign-in: thrown inside the step's transaction, so that nothing
 * is written, and answered outside it as the 429 the lock says (mfa-login.service.ts).
 */
export class SecondFactorLockedError extends Error {
  readonly lock: FoundLock;
  constructor(lock: FoundLock) {
    super('locked');
    this.lock = lock;
  }
}

/** The codes a UserError of this domain's mutations can carry (MfaErrorCode in schema.graphql). */
export const MFA_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'sso_required',
  'sso_failed',
];
