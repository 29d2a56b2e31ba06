// Users' refusals. Each keeps the stable code of its kind (invalid_request, invalid_credentials, forbidden,
// conflict) and the HTTP status that code maps to (docs/architecture.md#errors).
import { ConflictError, ForbiddenError, InvalidCredentialsError, ValidationError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** A new e-mail address or password is asked without the current password. */
export class CurrentPasswordRequiredError extends ValidationError {
  constructor() {
    super('Changing the e-mail or password needs the current password', [
      { path: 'current_password', message: 'is required' },
    ]);
  }
}

/** The current password given for a new e-mail address or password is wrong (counted by the sign-in throttle). */
export class WrongCurrentPasswordError extends InvalidCredentialsError {
  constructor() {
    super('The current password is wrong');
  }
}

/** What only a platform administrator may do to an account (marking an address verified, even one's own). */
export type UserAdminAction = 'change other users' | 'mark e-mail addresses verified' | 'delete other users';

export class UserAdminOnlyError extends ForbiddenError {
  constructor(action: UserAdminAction) {
    super(`Only platform administrators ${action}`);
  }
}

/** Deleting the account would leave the platform without an administrator. */
export class SoleOperatorOwnerError extends ConflictError {
  constructor() {
    super(
      'This account is the only owner of the operator organization: make another platform administrator owner first',
    );
  }
}

/** Deleting the account would leave an organization with members but no owner. */
export class SoleOwnerError extends ConflictError {
  constructor() {
    super('This account is the only owner of an organization with other members: transfer ownership first');
  }
}

/** The codes a UserError of this domain's mutations can carry (UsersErrorCode in schema.graphql). */
export const USERS_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'sso_required',
  'sso_failed',
];
