// Organizations' refusals (docs/architecture.md#errors). Membership and role refusals are access.ts's and
// members.errors.ts's; what is left here is the organization itself.
import { NotFoundError } from '../../errors/index.ts';

/** An organization that does not exist, or (the same answer, docs/architecture.md#tenancy-and-roles) one the caller is not in. */
export class OrganizationNotFoundError extends NotFoundError {
  constructor() {
    super('Organization');
  }
}
