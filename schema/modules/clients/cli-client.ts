// Tessera's own command-line client (docs/architecture.md#apps-without-secrets): `tessera login` signs a person in
// through the device flow against it. It is public (a command line keeps no secret), owned by the operator
// organization and platform-wide: every signed-in person may authorize it, whatever their organizations, and its
// tokens act in each of them as the person's session does, with the scope `api`, which no other public client gets.
// Tessera makes it at start and no one changes it (clients.service.ts refuses).
import type { Db } from '../../db.ts';
import { uuidv7 } from '../../lib/ids.ts';

/** The CLI's client_id, the same at every Tessera, so that the tool needs nothing but the URL. */
export const CLI_CLIENT_ID = 'tessera-cli';
export const CLI_SCOPES = ['openid', 'email', 'offline_access', 'api'];
const CLI_GRANT_TYPES = ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'];

/**
 * Makes the CLI's client when the operator organization exists and the client does not. One statement, so that
 * processes starting at once make one; an existing client (perhaps disabled by an operator) stays as it is.
 */
export async function ensureCliClient(db: Db): Promise<void> {
  await db.$executeRaw`
    insert into oauth_clients (id, client_id, secret_hash, token_endpoint_auth_method, organization_id, name, description,
                               redirect_uris, allowed_scopes, grant_types, consent_required, platform_wide, updated_at)
    select ${uuidv7()}, ${CLI_CLIENT_ID}, null, 'none', o.id, 'Tessera command line',
           'The tessera command-line tool, signed in with tessera login', '{}'::text[], ${CLI_SCOPES}::text[],
           ${CLI_GRANT_TYPES}::text[], true, true, now()
    from organizations o where o.is_operator limit 1
    on conflict (client_id) do nothing`;
}
