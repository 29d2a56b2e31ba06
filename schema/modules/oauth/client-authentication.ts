// Client authentication at the token, revocation and introspection endpoints: client_secret_post (RFC 6749 2.3.1),
// or, for a public client (token_endpoint_auth_method "none", RFC 6749 2.1), its client_id alone: a public client
// that sends a secret is refused, so that a confidential client's id never passes without one
// (docs/architecture.md#apps-without-secrets). A client read here is remembered by the process (remembered-clients.ts), so that a code exchange or a
// refresh needs no statement of its own to read it (docs/architecture.md#hot-paths).
import type { Context } from '../../context.ts';
import { hotStatement, Prisma } from '../../db.ts';
import { constantTimeEqual, sha256 } from '../../lib/crypto.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { InvalidClient } from './oauth.errors.ts';

/** A client row as client authentication read it, with the row's version (remembered-clients.ts). */
export type AuthenticatedClient = Prisma.OAuthClientGetPayload<object> & { version: string };

const CLIENT_BY_CLIENT_ID = hotStatement<{ clientId: string }, AuthenticatedClient>(
  (p) => Prisma.sql`
  SELECT id, client_id AS "clientId", secret_hash AS "secretHash", token_endpoint_auth_method AS "tokenEndpointAuthMethod", organization_id AS "organizationId", created_by_id AS "createdById",
         name, description, redirect_uris AS "redirectUris", post_logout_redirect_uris AS "postLogoutRedirectUris",
         allowed_origins AS "allowedOrigins", allowed_scopes AS "allowedScopes", grant_types AS "grantTypes",
         id_token_signed_response_alg AS "idTokenSignedResponseAlg", enabled, consent_required AS "consentRequired", platform_wide AS "platformWide",
         metadata_document AS "metadataDocument", metadata_expires_at AS "metadataExpiresAt",
         registration_token_hash AS "registrationTokenHash", resources, created_at AS "createdAt", updated_at AS "updatedAt", xmin::text AS version
  FROM oauth_clients WHERE client_id = ${p.clientId}::text`,
);

/** Client authentication at the token, revocation and introspection endpoints (client_secret_post, or none). */
export async function authenticateClient(
  ctx: Context,
  clientId: unknown,
  clientSecret: unknown,
): Promise<AuthenticatedClient> {
  if (typeof clientId !== 'string' || !clientId || clientId.length > 200) throw new InvalidClient();
  // Every token, revocation and introspection request reads this row: one prepared statement, composed once.
  const [client] = await CLIENT_BY_CLIENT_ID(ctx.db, { clientId });
  if (!client || !usable(ctx, client)) {
    await recordAudit(ctx, {
      action: 'oauth.client_auth',
      outcome: 'failure',
      actorId: null,
      details: { clientId: clientId.slice(0, 100), reason: client ? 'disabled' : 'unknown' },
    });
    throw new InvalidClient();
  }
  if (!credentialsMatch(client, clientSecret)) {
    await recordAudit(ctx, {
      action: 'oauth.client_auth',
      outcome: 'failure',
      actorId: null,
      organizationId: client.organizationId,
      targetType: 'oauth_client',
      targetId: client.id,
      details: { reason: client.secretHash === null ? 'secret_sent_by_public_client' : 'bad_secret' },
    });
    throw new InvalidClient('Client authentication failed');
  }
  ctx.rememberedClients.remember(client);
  return client;
}

/**
 * The client as this process remembers it (remembered-clients.ts), when the request's secret matches and the
 * client is enabled and allowed `grantType`: a guess that the statement redeeming the code or refresh token
 * confirms against the row's version. Anything else (unknown here, or refused) goes to authenticateClient, which
 * reads the row afresh and answers with the exact error.
 */
export function rememberedClient(
  ctx: Context,
  clientId: unknown,
  clientSecret: unknown,
  grantType: string,
): AuthenticatedClient | undefined {
  if (typeof clientId !== 'string') return undefined;
  const client = ctx.rememberedClients.get(clientId);
  if (!client || !usable(ctx, client) || !client.grantTypes.includes(grantType)) return undefined;
  return credentialsMatch(client, clientSecret) ? client : undefined;
}

/** Enabled, and not a metadata document's client where the platform forbids them (METADATA_CLIENTS=off). */
const usable = (ctx: Context, client: Pick<AuthenticatedClient, 'enabled' | 'metadataDocument'>) =>
  client.enabled && (!client.metadataDocument || ctx.settings.metadataClients === true);

/** A confidential client's secret matches; a public client (no secret) sent none (an empty one counts as none). */
function credentialsMatch(client: Pick<AuthenticatedClient, 'secretHash'>, clientSecret: unknown): boolean {
  if (client.secretHash === null) return clientSecret === undefined || clientSecret === '';
  return (
    typeof clientSecret === 'string' &&
    clientSecret.length <= 200 &&
    constantTimeEqual(client.secretHash, sha256(clientSecret))
  );
}
