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
import { DEVICE_CODE_GRANT, deviceCode } from './token/device-code.ts';
import { required, type Grant, type Params, type RedeemingGrant } from './token/grant.ts';
import { refreshToken } from './token/refresh-token.ts';
import type { TokenResponse } from './token/sign.ts';

/** The grants that redeem a code or a refresh token: their statement confirms a remembered client's row. */
const REDEEMING: ReadonlyMap<string, RedeemingGrant> = new Map([
  ['authorization_code', authorizationCode],
  ['refresh_token', refreshToken],
]);

/**
 * The grants, by grant_type: authorization_code (RFC 6749 4.1.3), refresh_token (6), client_credentials (4.4) and
 * device_code (RFC 8628 3.4), which always authenticates its client afresh (it is polled, not a hot path).
 */
const GRANTS: ReadonlyMap<string, Grant> = new Map<string, Grant>([
  ...REDEEMING,
  ['client_credentials', clientCredentials],
  [DEVICE_CODE_GRANT, deviceCode],
]);

export async function exchange(ctx: Context, params: Params): Promise<TokenResponse> {
  const grantType = parseGrantType(params);
  const issued = await redeem(ctx, grantType, params);
  ctx.metrics.tokenIssued(grantType);
  return issued;
}

async function redeem(ctx: Context, grantType: string, params: Params): Promise<TokenResponse> {
  // A client this process remembers, for a grant whose statement confirms it: no statement of its own to read it.
  const redeeming = REDEEMING.get(grantType);
  const remembered = redeeming && rememberedClient(ctx, params.client_id, params.client_secret, grantType);
  if (redeeming && remembered) {
    const outcome = await redeeming.redeemRemembered(ctx, remembered, params);
    if (outcome !== 'unredeemed') return outcome;
    // Stale (or not confirmed): forgotten, then one fresh authentication and one retry.
    ctx.rememberedClients.forget(remembered.clientId);
  }
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

/** A grant type we support (else unsupported_grant_type) that the client is registered for (else unauthorized_client). */
function checkGrantType(client: AuthenticatedClient, grantType: string): Grant {
  const grant = GRANTS.get(grantType);
  if (!grant) throw new UnsupportedGrantType();
  if (!client.grantTypes.includes(grantType)) throw new UnauthorizedClient();
  return grant;
}
