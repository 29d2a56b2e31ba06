// Step 1: the client exists and is enabled, and was named once. Until it is trusted, errors stay on our page. A
// client known only by its metadata document does not exist where the platform forbids them (METADATA_CLIENTS=off).
import { AuthorizePageError, InvalidClient, InvalidRequest } from '../oauth.errors.ts';
import type { AuthorizeClient, SplitParams } from './request.ts';

export function checkClient(
  client: AuthorizeClient | null,
  { repeated }: SplitParams,
  metadataClients: boolean,
): AuthorizeClient {
  if (!client || !client.enabled || (client.metadataDocument && !metadataClients))
    throw new AuthorizePageError(new InvalidClient());
  if (repeated.includes('client_id'))
    throw new AuthorizePageError(new InvalidRequest(`Parameter given more than once: ${repeated.join(', ')}`));
  return client;
}
