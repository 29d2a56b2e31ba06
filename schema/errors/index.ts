// One error vocabulary for GraphQL, REST and the portals. `code` is stable and machine-readable; the message
// is safe to show. Anything that is not a DomainError is internal: logged, and masked before it leaves.
import { GraphQLError } from 'graphql';
import type { UserErrorCode } from './codes.ts';

export interface FieldProblem {
  path: string;
  message: string;
}

export class DomainError extends GraphQLError {
  readonly code: string;
  constructor(code: string, message: string, extensions: Record<string, unknown> = {}) {
    super(message, { extensions: { code, ...extensions } });
    this.code = code;
  }
}

/** Access problems: top-level GraphQL errors (the caller cannot fix them by changing the input). */
export class UnauthenticatedError extends DomainError {
  constructor(message = 'Authentication required') {
    super('unauthenticated', message);
  }
}
export class ForbiddenError extends DomainError {
  constructor(message = 'Your role does not allow this', extensions: Record<string, unknown> = {}) {
    super('forbidden', message, extensions);
  }
}
/**
 * An OAuth access token acting beyond its scopes (RFC 6750 3.1): the token is fine, but the user never granted
 * this client the `scope` the operation needs. REST answers 403 with a WWW-Authenticate naming the scope.
 */
export class InsufficientScopeError extends DomainError {
  readonly scope: string;
  constructor(scope: string, message = `This access token lacks the scope "${scope}"`) {
    super('insufficient_scope', message, { scope });
    this.scope = scope;
  }
}
/** Also what another tenant's identifier answers: existence is never revealed across organizations. */
export class NotFoundError extends DomainError {
  constructor(what = 'Resource') {
    super('not_found', `${what} not found`);
  }
}
export class RateLimitedError extends DomainError {
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number, message = 'Too many attempts; try again later') {
    super('rate_limited', message, { retryAfter: retryAfterSeconds });
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * User-correctable problems: typed members of a mutation's result union. A class that gives a code of its own
 * names it as its static `code`, which its subclasses inherit: test/schema/error-codes.test.ts reads it there.
 */
export class UserError extends DomainError {
  declare readonly code: UserErrorCode;
  readonly details: FieldProblem[];
  constructor(code: UserErrorCode, message: string, details: FieldProblem[] = []) {
    super(code, message, details.length ? { details } : {});
    this.details = details;
  }
}
export class ValidationError extends UserError {
  static readonly code = 'invalid_request';
  constructor(message: string, details: FieldProblem[] = []) {
    super(ValidationError.code, message, details);
  }
}
export class ConflictError extends UserError {
  static readonly code = 'conflict';
  constructor(message: string) {
    super(ConflictError.code, message);
  }
}
export class InvalidCredentialsError extends UserError {
  static readonly code = 'invalid_credentials';
  constructor(message = 'Invalid email or password') {
    super(InvalidCredentialsError.code, message);
  }
}
