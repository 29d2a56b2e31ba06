// Memberships' and invitations' refusals (docs/architecture.md#tenancy-and-roles). Each keeps the stable code of
// its kind (forbidden, conflict, invalid_request, invalid_credentials) and the HTTP status that code maps to.
import {
  ConflictError,
  ForbiddenError,
  InvalidCredentialsError,
  ValidationError,
  type FieldProblem,
} from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** Admins act on members and admins; only owners act on owners. */
export class OwnerOnlyError extends ForbiddenError {
  constructor() {
    super('Only an owner can change an owner');
  }
}

/** Nobody gives a role above their own, by a change of role or by an invitation. */
export class RoleAboveYoursError extends ForbiddenError {
  constructor(how: 'grant' | 'invite with' | 'map a group to' | 'remove the mapping of') {
    super(`You cannot ${how} a role above yours`);
  }
}

/** The change would leave the organization without an owner. */
export class LastOwnerError extends ConflictError {
  constructor() {
    super('An organization needs at least one owner: make someone else owner first');
  }
}

export class AlreadyMemberError extends ConflictError {
  constructor() {
    super('This person is already a member');
  }
}

/** The invitation was accepted, revoked or expired already. */
export class InvitationNotPendingError extends ConflictError {
  constructor(action: 'revoked' | 'resent') {
    super(`Only a pending invitation can be ${action}: this one was accepted, revoked or has expired`);
  }
}

/** An unknown token, or one of an invitation accepted, revoked or expired: the same answer for each. */
export class InvalidInvitationError extends ValidationError {
  constructor() {
    super('This invitation is not valid: it may have expired, been used or been revoked', [
      { path: 'token', message: 'is not a valid invitation' },
    ]);
  }
}

/** The invited address has an account: its holder accepts signed in, or with its password (throttled). */
export class InviteeNotProvenError extends InvalidCredentialsError {
  constructor() {
    super('Sign in as the invited account, or give its password, to accept');
  }
}

/**
 * The invited address has no account yet, and the fields to create one are missing or invalid. The message names
 * only the fields in `problems` ("The password must be 12 to 256 characters"), so a filled one is never blamed.
 */
export class NewAccountFieldsError extends ValidationError {
  constructor(problems: FieldProblem[]) {
    const sentence = problems.map((p) => `the ${p.path} ${p.message}`).join(', and ');
    super(sentence.charAt(0).toUpperCase() + sentence.slice(1), problems);
  }
}

/** Ownership goes to someone else: the caller is an owner already. */
export class TransferToSelfError extends ValidationError {
  constructor() {
    super('Choose another member to make owner', [{ path: 'userId', message: 'must be another member' }]);
  }
}

/** The codes a UserError of this domain's mutations can carry (MembersErrorCode in schema.graphql). */
export const MEMBERS_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'sso_required',
  'sso_failed',
];
