// API keys' refusals. Each keeps the stable code of its kind (forbidden) and the HTTP status that code maps to
// (docs/architecture.md#errors).
import { ForbiddenError } from '../../errors/index.ts';

/** A key's role is never above its creator's (docs/architecture.md#identity-sessions-and-tokens). */
export class KeyRoleAboveYoursError extends ForbiddenError {
  constructor() {
    super('An API key cannot have a role above yours');
  }
}
