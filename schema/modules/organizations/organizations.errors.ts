// Organizations' refusals (docs/architecture.md#errors). Membership and role refusals are access.ts's and
// members.errors.ts's; what is left here is the organization itself.
import { NotFoundError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** An organization that does not exist, or (the same answer, docs/architecture.md#tenancy-and-roles) one the caller is not in. */
export class OrganizationNotFoundError extends NotFoundError {
  constructor() {
    super('Organization');
  }
}

/** The codes a UserError of this domain's mutations can carry (OrganizationsErrorCode in schema.graphql). */
export const ORGANIZATIONS_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'sso_required',
  'sso_failed',
];
