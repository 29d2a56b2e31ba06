// The token endpoint (RFC 6749 3.2) as named steps in order, like the authorization endpoint: parse the grant type,
// authenticate the client (client_secret_post only), check the grant type, then redeem with the grant's handler
// (token/, one file per grant, each with its one statement). A code exchange or a refresh for a client the process
// remembers needs no statement to read the client: the grant's statement confirms the client's row
// (remembered-clients.ts), and a stale one is answered by one fresh authentication and one retry. Tokens are signed
// after the statement, holding no connection (docs/architecture.md#hot-paths).
import type { Context } from '../../context.ts';
import { authenticateClient, rememberedClient, type AuthenticatedClient } from './client-authentication.ts';
import { InvalidRequest, UnauthorizedClient, UnsupportedGrantType } from './oauth.errors.ts';
import { authorizationCode } from './token/authorization-code.ts';
import { clientCredentials } from './token/client-credentials.ts';
import { required, type Grant, type Params } from './token/grant.ts';
import { refreshToken } from './token/refresh-token.ts';
import type { TokenResponse } from './token/sign.ts';

/** The grants, by grant_type: authorization_code (RFC 6749 4.1.3), refresh_token (6), client_credentials (4.4). */
const GRANTS: ReadonlyMap<string, Grant> = new Map([
  ['authorization_code', authorizationCode],
  ['refresh_token', refreshToken],
  ['client_credentials', clientCredentials],
]);

export async function exchange(ctx: Context, params: Params): Promise<TokenResponse> {
  const grantType = parseGrantType(params);
  const answered = await redeemForRememberedClient(ctx, grantType, params);
  if (answered) return answered;
  const client = await authenticateClient(ctx, params.client_id, params.client_secret);
  const grant = checkGrantType(client, grantType);
  return grant.redeem(ctx, client, params);
}

/** grant_type is required; whether it is one we support is said once the client is authenticated. */
function parseGrantType(params: Params): string {
  const grantType = required(params.grant_type, 'grant_type');
  if (grantType instanceof InvalidRequest) throw grantType;
  return grantType;
}

/**
 * Authenticate and redeem with a client this process remembers (rememberedClient), for a grant that redeems a code or
 * a refresh token. Null when the client is not remembered here, or is stale: then it is forgotten, and the request
 * goes on to a fresh authentication.
 */
async function redeemForRememberedClient(ctx: Context, grantType: string, params: Params): Promise<TokenResponse | null> {
  const grant = GRANTS.get(grantType);
  if (!grant?.redeemRemembered) return null;
  const client = rememberedClient(ctx, params.client_id, params.client_secret, grantType);
  if (!client) return null;
  const outcome = await grant.redeemRemembered(ctx, client, params);
  if (outcome !== 'stale') return outcome;
  ctx.rememberedClients.forget(client.clientId);
  return null;
}

/** A grant type we support (else unsupported_grant_type) that the client is registered for (else unauthorized_client). */
function checkGrantType(client: AuthenticatedClient, grantType: string): Grant {
  const grant = GRANTS.get(grantType);
  if (!grant) throw new UnsupportedGrantType();
  if (!client.grantTypes.includes(grantType)) throw new UnauthorizedClient();
  return grant;
}
