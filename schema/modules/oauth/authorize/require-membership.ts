// Step 11: only members of the client's organization may authorize it; to anyone else the client does not exist.
import { InvalidClient } from '../oauth.errors.ts';

export function requireMembership(member: boolean): void {
  if (!member) throw new InvalidClient('Client not found');
}
