// Refusals of directory provisioning, each with the SCIM error type it answers with (RFC 7644 3.12).
import { ConflictError, ValidationError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';
import type { ZodError } from 'zod';

/** userName, externalId or a group's displayName already taken in this directory. */
export class ScimUniquenessError extends ConflictError {
  readonly scimType = 'uniqueness';
  constructor(what: string) {
    super(`${what} is already in use in this directory`);
  }
}

/**
 * An address of an existing account, or of a domain another organization verified, that this organization does not
 * manage (docs/architecture.md#managed-accounts): to this directory it is taken. The person can still be invited,
 * and accept.
 */
export class ScimAccountNotManagedError extends ConflictError {
  readonly scimType = 'uniqueness';
  constructor() {
    super("This address is outside this organization's verified domains and already taken: invite the person instead");
  }
}

/** A value the resource cannot take (RFC 7644 3.12 invalidValue). */
export class ScimInvalidValueError extends ValidationError {
  readonly scimType = 'invalidValue';
  constructor(path: string, message: string) {
    super(`${path} ${message}`, [{ path, message }]);
  }

  /** The first problem of a failed check (SCIM answers with one), on `resource` when it names no attribute. */
  static first(error: ZodError, resource: string): ScimInvalidValueError {
    const [issue] = error.issues;
    if (!issue) throw new Error('ScimInvalidValueError.first: a failed check without a problem');
    return new ScimInvalidValueError(issue.path.join('.') || resource, issue.message);
  }
}

/** A change the organization cannot take: its last owner deactivated or removed. */
export class ScimLastOwnerError extends ConflictError {
  readonly scimType = 'mutability';
  constructor() {
    super("This person is the organization's last owner: make someone else owner in Tessera first");
  }
}

/** The user changed between the read a PATCH was applied to and its write: read again and apply again. */
export class ScimVersionConflictError extends ConflictError {
  readonly scimType = 'mutability';
  constructor() {
    super('The resource changed while this request was applied: send it again');
  }
}

/**
 * A group that gives a subscription's seats cannot take one more member: every seat is taken (or the subscription
 * is not live). Nothing of the request is kept; the admins see the refusal in the audit log.
 */
export class ScimNoSeatError extends ConflictError {
  readonly seat: { organizationId: string; subscriptionId: string; userId: string };
  readonly reason: string;
  constructor(reason: string, seat: { organizationId: string; subscriptionId: string; userId: string }) {
    super(`No seat for this member: ${reason}`);
    this.reason = reason;
    this.seat = seat;
  }
}

/** The codes a UserError of this domain's mutations can carry (DirectoryErrorCode in schema.graphql). */
export const DIRECTORY_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'sso_required',
  'sso_failed',
];
