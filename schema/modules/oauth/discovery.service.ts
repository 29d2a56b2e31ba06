// Discovery (OIDC Discovery 1.0, RFC 8414) and which browser origins may call the OAuth endpoints.
import type { Context } from '../../context.ts';
import { SIGNING_ALGS } from '../keys/keys.service.ts';
import { STANDARD_SCOPES } from './scopes.ts';

export function discoveryDocument(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    userinfo_endpoint: `${issuer}/oauth/userinfo`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    end_session_endpoint: `${issuer}/oauth/logout`,
    scopes_supported: Object.keys(STANDARD_SCOPES),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [...SIGNING_ALGS],
    token_endpoint_auth_methods_supported: ['client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['client_secret_post'],
    introspection_endpoint_auth_methods_supported: ['client_secret_post'],
    code_challenge_methods_supported: ['S256', 'plain'],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash', 'azp', 'email', 'email_verified', 'name', 'picture', 'updated_at', 'organization_id', 'organizationId', 'organization_name', 'role'],
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
  const client = await ctx.db.oAuthClient.findFirst({ where: { enabled: true, allowedOrigins: { has: origin } }, select: { id: true } });
  return !!client;
}
