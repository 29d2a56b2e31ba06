// Refusals of the account flows: password reset and address verification (docs/architecture.md#errors).
import { ConflictError, ValidationError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** An unknown link, or one used, voided by a newer one, or expired: the same answer for each. */
export class InvalidLinkError extends ValidationError {
  constructor(what: 'reset' | 'verification') {
    super(
      what === 'reset'
        ? 'This password reset link is not valid: it may have expired or been used. Ask for a new one.'
        : 'This verification link is not valid: it may have expired, been used or been replaced by a newer one.',
      [{ path: 'token', message: 'is not a valid link' }],
    );
  }
}

export class AlreadyVerifiedError extends ConflictError {
  constructor() {
    super('This e-mail address is already verified');
  }
}

/** An address is one account's: changing or verifying it where another account has it. */
export class EmailTakenError extends ConflictError {
  constructor() {
    super('Another account uses this e-mail address');
  }
}

/** The codes a UserError of this domain's mutations can carry (AccountsErrorCode in schema.graphql). */
export const ACCOUNTS_ERROR_CODES: readonly UserErrorCode[] = ['invalid_request', 'conflict'];
