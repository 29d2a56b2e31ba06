// Refusals of the access rules (access.ts, managed.ts): access problems, so top-level GraphQL errors, never
// members of a mutation's result.
import { DomainError, ForbiddenError } from '../errors/index.ts';

/**
 * The organization requires a second factor and the caller's person has none: everything in it is refused until one
 * is set up, but the caller's own second-factor routes (docs/architecture.md#second-factors).
 */
export class MfaEnrollmentRequiredError extends DomainError {
  constructor() {
    super(
      'mfa_enrollment_required',
      'This organization requires a second factor: set one up at /portal/security first',
    );
  }
}

/**
 * An OAuth access token refused for what is first-party only (docs/architecture.md#authorization). `reason` tells
 * it apart from a role's refusal: the same person with a session may well be allowed.
 */
export class FirstPartyOnlyError extends ForbiddenError {
  constructor(what = 'do this', remedy = 'use a session or an API key') {
    super(`An access token cannot ${what}: ${remedy}`, { reason: 'first_party_only' });
  }
}

/** An organization acting on an account it does not manage, beyond its membership: it may remove the member, no more. */
export class AccountNotManagedError extends ForbiddenError {
  constructor(what: string) {
    super(
      `Only the organization that verified this person's domain may ${what}; this organization acts on its membership alone`,
    );
  }
}
