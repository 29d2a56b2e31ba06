// Step 3: from here errors go back to the client. Any other parameter given twice is invalid_request (RFC 6749 3.1).
import { InvalidRequest } from '../oauth.errors.ts';
import type { SplitParams } from './request.ts';

export function rejectRepeated({ repeated }: SplitParams): void {
  if (repeated.length) throw new InvalidRequest(`Parameter given more than once: ${repeated.join(', ')}`);
}
