// Discovery (OIDC Discovery 1.0, RFC 8414) and which browser origins may call the OAuth endpoints.
import type { Context, ContextBase } from '../../context.ts';
import { ACR_VALUES } from './acr.ts';
import type { Db } from '../../db.ts';
import { SIGNING_ALGS } from '../../keys/signing-keys.ts';
import { STANDARD_SCOPES } from './scopes.ts';
import { TOKEN_ENDPOINT_AUTH_METHODS } from '../clients/clients.service.ts';
import { DEVICE_CODE_GRANT } from './token/device-code.ts';

/**
 * How long the product slugs are kept in memory. Discovery is read on every relying party's start (and is
 * benchmarked), the catalog changes rarely, and clients cache the document for 300 s anyway: a new product's
 * scope shows within this time, at the cost of one small query per process per period.
 */
const PRODUCT_SCOPES_TTL_MS = 30_000;

const productCache = new WeakMap<Db, { until: number; slugs: Promise<string[]> }>();

/** The product slugs, each a scope (docs/architecture.md#oauth-and-openid-connect), read at most once per PRODUCT_SCOPES_TTL_MS and request wave. */
function productScopes(base: ContextBase): Promise<string[]> {
  const now = base.clock.now().getTime();
  const cached = productCache.get(base.db);
  if (cached && cached.until > now) return cached.slugs;
  const slugs = base.db.product
    .findMany({ select: { slug: true }, orderBy: { slug: 'asc' } })
    .then((rows) => rows.map((r) => r.slug));
  const entry = { until: now + PRODUCT_SCOPES_TTL_MS, slugs };
  productCache.set(base.db, entry);
  // A failed read is not kept: the next request tries again, and meanwhile the last list known still serves.
  return slugs.catch((error: unknown) => {
    if (productCache.get(base.db) === entry) productCache.delete(base.db);
    if (cached) return cached.slugs;
    throw error;
  });
}

// The document is the same object while the issuer and the product list are: the endpoint can keep its bytes.
let lastDocument:
  | { issuer: string; products: string[]; metadataClients: boolean; document: ReturnType<typeof buildDocument> }
  | undefined;

export async function discoveryDocument(base: ContextBase) {
  const issuer = base.settings.issuer();
  const products = await productScopes(base);
  const metadataClients = base.settings.metadataClients === true;
  if (
    lastDocument?.issuer !== issuer ||
    lastDocument.products !== products ||
    lastDocument.metadataClients !== metadataClients
  ) {
    lastDocument = { issuer, products, metadataClients, document: buildDocument(issuer, products, metadataClients) };
  }
  return lastDocument.document;
}

function buildDocument(issuer: string, products: string[], metadataClients: boolean) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    userinfo_endpoint: `${issuer}/oauth/userinfo`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    device_authorization_endpoint: `${issuer}/oauth/device_authorization`,
    // RFC 7591, with an initial access token an organization's admin made: open registration is off.
    registration_endpoint: `${issuer}/oauth/register`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    end_session_endpoint: `${issuer}/oauth/logout`,
    scopes_supported: [...Object.keys(STANDARD_SCOPES), ...products.filter((slug) => !(slug in STANDARD_SCOPES))],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials', DEVICE_CODE_GRANT],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [...SIGNING_ALGS],
    // `none`: a public client authenticates by its client_id alone (docs/architecture.md#apps-without-secrets).
    token_endpoint_auth_methods_supported: [...TOKEN_ENDPOINT_AUTH_METHODS],
    revocation_endpoint_auth_methods_supported: [...TOKEN_ENDPOINT_AUTH_METHODS],
    introspection_endpoint_auth_methods_supported: [...TOKEN_ENDPOINT_AUTH_METHODS],
    code_challenge_methods_supported: ['S256', 'plain'],
    // An https client_id with a path names the app's own metadata document (docs/architecture.md#apps-without-secrets).
    client_id_metadata_document_supported: metadataClients,
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    acr_values_supported: [...ACR_VALUES],
    claims_supported: [
      'sub',
      'iss',
      'aud',
      'exp',
      'iat',
      'auth_time',
      'nonce',
      'at_hash',
      'azp',
      'amr',
      'acr',
      'email',
      'email_verified',
      'name',
      'picture',
      'updated_at',
      'organization_id',
      'organizationId',
      'organization_name',
      'role',
      'products',
      'licenses',
      'entitlements',
    ],
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    authorization_response_iss_parameter_supported: true,
    ui_locales_supported: ['en'],
  };
}

/** A browser origin may call the token, userinfo, revocation and key endpoints when an enabled client lists it. */
export async function originAllowed(ctx: Context, origin: string): Promise<boolean> {
  if (origin.length > 2048) return false;
  const client = await ctx.db.oAuthClient.findFirst({
    where: { enabled: true, allowedOrigins: { has: origin } },
    select: { id: true },
  });
  return !!client;
}
