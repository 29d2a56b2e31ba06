// OpenID Connect as a connection's protocol (docs/architecture.md#single-sign-on): openid-client as the relying party,
// the authorization code flow with PKCE (RFC 7636, S256) and a nonce, the ID token checked against the issuer's JWKS
// (signature, iss, aud, exp, nonce: OpenID Connect Core 3.1.3.7). Every call to the issuer goes through
// upstreamFetch, the webhook address guard.
import {
  authorizationCodeGrant,
  buildAuthorizationUrl,
  calculatePKCECodeChallenge,
  ClientError,
  ClientSecretBasic,
  ClientSecretPost,
  customFetch,
  discovery,
  enableNonRepudiationChecks,
  fetchUserInfo,
  None,
  randomNonce,
  randomPKCECodeVerifier,
  type ClientAuth,
  type Configuration,
  type DiscoveryRequestOptions,
  type ServerMetadata,
} from 'openid-client';
import type { Context } from '../../context.ts';
import { sha256 } from '../../lib/crypto.ts';
import { DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from '../../push/destination.ts';
import { callbackUrl, type LoadedConnection, type SsoProtocol, type UpstreamProfile } from './protocol.ts';
import { IssuerUnreachableError, SsoSignInError } from './sso.errors.ts';
import { cleanEmail, cleanText, signInFailure, storableClaims, UNREACHABLE } from './upstream-answer.ts';
import { upstreamFetch, upstreamFetchErrorIn } from '../../push/guarded-fetch.ts';

export const DEFAULT_OIDC_SCOPES = ['openid', 'email', 'profile'];

const settingsOf = (ctx: Context): WebhookSettings => ctx.settings.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;

/** openid-client's options for a discovery: the guarded fetch, and its own time-out a little past the fetch's. */
function discoveryOptions(settings: WebhookSettings): DiscoveryRequestOptions {
  return { [customFetch]: upstreamFetch(settings), timeout: Math.ceil(settings.timeoutMs / 1000) + 1 };
}

/**
 * client_secret_basic, the default of RFC 8414 2, unless the issuer lists client_secret_post and not basic. Chosen at
 * each request from the discovered metadata, so that discovery needs no guess.
 */
function clientAuthentication(secret: string | null): ClientAuth {
  if (!secret) return None();
  const basic = ClientSecretBasic(secret);
  const post = ClientSecretPost(secret);
  return (as, client, body, headers) => {
    const methods = as.token_endpoint_auth_methods_supported;
    const postOnly =
      Array.isArray(methods) && methods.includes('client_secret_post') && !methods.includes('client_secret_basic');
    (postOnly ? post : basic)(as, client, body, headers);
  };
}

/** Why an issuer's discovery failed, in words an administrator can act on (it names no secret). */
function discoveryProblem(error: unknown): string {
  const fetchError = upstreamFetchErrorIn(error);
  if (fetchError) return fetchError.message;
  if (error instanceof ClientError) {
    const cause = error.cause as { status?: unknown; body?: { issuer?: unknown } } | undefined;
    switch (error.code) {
      case 'OAUTH_HTTP_REQUEST_FORBIDDEN':
      case 'OAUTH_REQUEST_PROTOCOL_FORBIDDEN':
        return 'the issuer must be an https URL';
      case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED':
        return `its discovery document names another issuer (${cleanText(cause?.body?.issuer, 200) ?? 'none'})`;
      case 'OAUTH_RESPONSE_IS_NOT_CONFORM':
        return `its discovery document answered${typeof cause?.status === 'number' ? ` HTTP ${cause.status}` : ' with an error'}`;
      case 'OAUTH_TIMEOUT':
      case 'OAUTH_ABORT':
        return 'it gave no answer in time';
    }
  }
  return 'its discovery document (/.well-known/openid-configuration) is not valid';
}

/** The endpoints this flow cannot do without (the issuer's metadata may omit them). */
function missingEndpoint(metadata: ServerMetadata): string | undefined {
  return (['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const).find(
    (name) => typeof metadata[name] !== 'string',
  );
}

/**
 * Checks that an issuer answers (when a connection is created or its issuer changed) and returns its metadata: never
 * from the cache, so that an administrator sees the issuer as it is now.
 */
export async function discoverIssuer(ctx: Context, issuer: string): Promise<ServerMetadata> {
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new IssuerUnreachableError('the issuer is not a URL');
  }
  let metadata: ServerMetadata;
  try {
    metadata = (await discovery(url, 'tessera', undefined, None(), discoveryOptions(settingsOf(ctx)))).serverMetadata();
  } catch (error) {
    throw new IssuerUnreachableError(discoveryProblem(error));
  }
  const missing = missingEndpoint(metadata);
  if (missing) throw new IssuerUnreachableError(`its discovery document has no ${missing}`);
  return metadata;
}

// Discovered configurations are kept a few minutes per issuer and client (its secret's hash included, so a new
// secret is used at once), and per guard settings: a context with other settings never reuses a fetch it would refuse.
// The configuration also keeps the issuer's JWKS between sign-ins (openid-client fetches it again for an unknown kid).
const CONFIGURATION_KEPT_MS = 5 * 60_000;
interface KeptConfiguration {
  until: number;
  config: Promise<Configuration>;
}
const configurations = new WeakMap<WebhookSettings, Map<string, KeptConfiguration>>();

async function configurationFor(ctx: Context, connection: LoadedConnection): Promise<Configuration> {
  if (!connection.issuer || !connection.clientId)
    throw new SsoSignInError('idp_error', 'This connection has no issuer or client id');
  const settings = settingsOf(ctx);
  let kept = configurations.get(settings);
  if (!kept) configurations.set(settings, (kept = new Map<string, KeptConfiguration>()));
  const key = [connection.issuer, connection.clientId, sha256(connection.clientSecret ?? '')].join('\n');
  const now = performance.now();
  const entry = kept.get(key);
  if (entry && entry.until > now) return entry.config;
  if (kept.size >= 1000) kept.clear();
  const { issuer, clientId, clientSecret } = connection;
  const config = (async () => {
    let url: URL;
    try {
      url = new URL(issuer);
    } catch {
      throw new SsoSignInError('idp_error', UNREACHABLE);
    }
    // OpenID Connect Core 3.1.3.7 lets TLS stand in for the ID token's signature when it comes from the token
    // endpoint; Tessera checks the signature against the issuer's JWKS all the same, so that a token endpoint answer
    // that was tampered with on its way (a TLS-inspecting proxy, a mis-issued certificate) signs nobody in.
    const options = { ...discoveryOptions(settings), execute: [enableNonRepudiationChecks] };
    const discovered = await discovery(
      url,
      clientId,
      clientSecret ? { client_secret: clientSecret } : undefined,
      clientAuthentication(clientSecret),
      options,
    ).catch((error: unknown) => {
      // A refusal of the guard, no answer, or an answer that is no discovery document: the issuer is not usable.
      if (upstreamFetchErrorIn(error)?.kind === 'too_large') throw signInFailure(error);
      throw new SsoSignInError('idp_error', UNREACHABLE);
    });
    if (missingEndpoint(discovered.serverMetadata())) throw new SsoSignInError('idp_error', UNREACHABLE);
    return discovered;
  })();
  kept.set(key, { until: now + CONFIGURATION_KEPT_MS, config });
  config.catch(() => kept.delete(key));
  return config;
}

const scopesOf = (connection: LoadedConnection) => {
  const scopes = connection.scopes.length ? connection.scopes : DEFAULT_OIDC_SCOPES;
  return scopes.includes('openid') ? scopes : ['openid', ...scopes];
};

/** A claim's values as strings: a string is one value, an array gives its strings. */
export function claimValues(value: unknown): string[] {
  const values = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
  return values.map((v) => cleanText(v, 256)).filter((v): v is string => v !== null);
}

/** The subject as Tessera keys a person by it: OpenID Connect Core 2 caps it at 255 ASCII characters. */
export function usableSubject(value: unknown): string {
  if (
    typeof value !== 'string' ||
    !value ||
    value.length > 255 ||
    /[\p{Cc}\p{Cf}]/u.test(value) ||
    value !== value.toWellFormed()
  ) {
    throw new SsoSignInError('invalid_response', "The identity provider's subject identifier is not usable");
  }
  return value;
}

function profileOf(
  connection: LoadedConnection,
  idClaims: Record<string, unknown>,
  userinfo: Record<string, unknown> | undefined,
): UpstreamProfile {
  const claim = (name: string) => (idClaims[name] !== undefined ? idClaims[name] : userinfo?.[name]);
  const email = cleanEmail(claim('email'));
  const verified = claim('email_verified');
  return {
    subject: usableSubject(idClaims.sub),
    email,
    // Some providers send the boolean as a string.
    emailVerified: email !== null && (verified === true || verified === 'true'),
    name: cleanText(claim('name')),
    roleValues: connection.roleClaim ? claimValues(claim(connection.roleClaim)) : [],
    amr: Array.isArray(idClaims.amr) ? claimValues(idClaims.amr.filter((v) => typeof v === 'string')) : [],
    claims: storableClaims({ ...userinfo, ...idClaims }) as Record<string, unknown>,
  };
}

export const oidcProtocol: SsoProtocol = {
  async depart(ctx, connection, state, hints) {
    const config = await configurationFor(ctx, connection);
    const codeVerifier = randomPKCECodeVerifier();
    const nonce = randomNonce();
    const parameters: Record<string, string> = {
      redirect_uri: callbackUrl(ctx, connection.id),
      scope: scopesOf(connection).join(' '),
      state,
      nonce,
      code_challenge: await calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    };
    if (hints.loginHint) parameters.login_hint = hints.loginHint;
    return { url: buildAuthorizationUrl(config, parameters).href, codeVerifier, nonce };
  },

  async arrive(ctx, connection, request, answer) {
    if (!request.codeVerifier || !request.nonce)
      throw new SsoSignInError('invalid_response', 'This sign-in was not started for OpenID Connect');
    const current = answeredAt(ctx, connection, answer.callbackUrl);
    const config = await configurationFor(ctx, connection);
    try {
      const tokens = await authorizationCodeGrant(config, current, {
        expectedState: request.id,
        expectedNonce: request.nonce,
        pkceCodeVerifier: request.codeVerifier,
        idTokenExpected: true,
      });
      const idClaims = tokens.claims() as Record<string, unknown> | undefined;
      if (!idClaims) throw new SsoSignInError('invalid_response', "The identity provider's answer had no ID token");
      // The ID token may carry only what OpenID Connect Core 5.4 puts there; the rest is at the userinfo endpoint.
      const wanted =
        idClaims.email === undefined || (connection.roleClaim !== null && idClaims[connection.roleClaim] === undefined);
      const userinfo =
        wanted && config.serverMetadata().userinfo_endpoint
          ? ((await fetchUserInfo(config, tokens.access_token, usableSubject(idClaims.sub))) as Record<string, unknown>)
          : undefined;
      return profileOf(connection, idClaims, userinfo);
    } catch (error) {
      throw signInFailure(error);
    }
  },
};

/**
 * The callback as the token request must name it: the registered redirect URI with the answer's query. Built from
 * BASE_URL rather than from the URL the browser used, which a proxy may have rewritten.
 */
export function answeredAt(ctx: Context, connection: LoadedConnection, answered: string | undefined): URL {
  let query: URLSearchParams;
  try {
    query = new URL(answered ?? '', 'https://callback.invalid').searchParams;
  } catch {
    throw new SsoSignInError('invalid_response', "The identity provider's answer was not valid");
  }
  const current = new URL(callbackUrl(ctx, connection.id));
  current.search = query.toString();
  return current;
}
