// One error vocabulary for GraphQL, REST and the portals. `code` is stable and machine-readable; the message
// is safe to show. Anything that is not a DomainError is internal: logged, and masked before it leaves.
import { GraphQLError } from 'graphql';

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

/** User-correctable problems: typed members of a mutation's result union. */
export class UserError extends DomainError {
  readonly details: FieldProblem[];
  constructor(code: string, message: string, details: FieldProblem[] = []) {
    super(code, message, details.length ? { details } : {});
    this.details = details;
  }
}
export class ValidationError extends UserError {
  constructor(message: string, details: FieldProblem[] = []) {
    super('invalid_request', message, details);
  }
}
export class ConflictError extends UserError {
  constructor(message: string) {
    super('conflict', message);
  }
}
export class InvalidCredentialsError extends UserError {
  constructor(message = 'Invalid email or password') {
    super('invalid_credentials', message);
  }
}
