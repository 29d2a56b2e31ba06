// API keys' refusals. Each keeps the stable code of its kind (forbidden) and the HTTP status that code maps to
// (docs/architecture.md#errors).
import { ForbiddenError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** A key's role is never above its creator's (docs/architecture.md#identity-sessions-and-tokens). */
export class KeyRoleAboveYoursError extends ForbiddenError {
  constructor() {
    super('An API key cannot have a role above yours');
  }
}

/** The codes a UserError of this domain's mutations can carry (ApiKeysErrorCode in schema.graphql). */
export const API_KEYS_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'sso_required',
  'sso_failed',
];
