// Step 5b: the resources asked for (RFC 8707 2, repeatable) are absolute URIs the client may ask tokens for; else
// invalid_target, back to the client. None asked: the tokens are for the client itself, as before. A metadata
// document's client may ask for the resources of the organization it acts in, which only a session names: its are
// checked once the organization admits it (authorize.service.ts).
import { parseResources, requireResourcesAllowed } from '../resources.ts';
import type { AuthorizeClient, SplitParams } from './request.ts';

export function checkResources(client: AuthorizeClient, { resource }: SplitParams): string[] {
  const resources = parseResources(resource);
  if (!client.metadataDocument) requireResourcesAllowed(resources, client.resources);
  return resources;
}
