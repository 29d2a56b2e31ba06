// Subscriptions' and seats' refusals, each with a stable code (403 forbidden, 409 conflict, 400 invalid_request).
import { ConflictError, ForbiddenError, ValidationError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** Platform administrators create and change subscriptions (docs/architecture.md#subscriptions-seats-and-licenses). */
export class SubscriptionWriterOnlyError extends ForbiddenError {
  constructor() {
    super('Only platform administrators create and change subscriptions');
  }
}

export class SeatsInUseError extends ConflictError {
  constructor(assigned: number) {
    super(`${assigned} seats are assigned: unassign seats before lowering total_seats below that`);
  }
}

export class NoSeatLeftError extends ConflictError {
  constructor(total: number) {
    super(`All ${total} seats of this subscription are assigned`);
  }
}

export class AlreadySeatedError extends ConflictError {
  constructor() {
    super('This member already has a seat on this subscription');
  }
}

export class SubscriptionNotLiveError extends ConflictError {
  constructor(status: string) {
    super(`Seats are assigned only on active or trial subscriptions; this one is ${status}`);
  }
}

export class NotAMemberError extends ValidationError {
  constructor() {
    super("A seat goes only to a member of the subscription's organization", [
      { path: 'userId', message: 'is not a member of the organization' },
    ]);
  }
}

/** The codes a UserError of this domain's mutations can carry (SubscriptionsErrorCode in schema.graphql). */
export const SUBSCRIPTIONS_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'sso_required',
  'sso_failed',
];
