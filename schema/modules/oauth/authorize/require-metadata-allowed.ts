// Step 11, first: a client known only by its metadata document signs a person into the organization their session acts
// in, and only where that organization's admins allow such clients (docs/architecture.md#apps-without-secrets).
// The client named its own redirect URI in the document it is known by, so the refusal goes back to it.
import { AccessDenied } from '../oauth.errors.ts';
import type { AuthorizeClient } from './request.ts';

/** What a person is told where their organization does not allow such clients (here, and when consent is given). */
export const NOT_ALLOWED = 'Your organization does not allow applications that are not registered with it';

export function requireMetadataAllowed(client: AuthorizeClient, metadataAllowed: boolean): void {
  if (!client.metadataDocument) return;
  if (!client.organizationId)
    throw new AccessDenied('Switch to an organization that allows applications not registered with it, then try again');
  if (!metadataAllowed) throw new AccessDenied(NOT_ALLOWED);
}
