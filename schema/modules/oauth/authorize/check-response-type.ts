// Step 4: only the authorization code flow, and only for a client registered for it.
import { InvalidRequest, UnauthorizedClient, UnsupportedResponseType } from '../oauth.errors.ts';
import type { AuthorizeClient } from './request.ts';

export function checkResponseType(client: AuthorizeClient, p: Record<string, string>): void {
  if (!p.response_type) throw new InvalidRequest('response_type is required');
  if (p.response_type !== 'code') throw new UnsupportedResponseType();
  if (!client.grantTypes.includes('authorization_code'))
    throw new UnauthorizedClient('This client may not use the authorization code flow');
}
