// "Sign in with GitHub" (docs/architecture.md#single-sign-on): GitHub's OAuth 2.0 (RFC 6749, not OpenID Connect) on
// github.com or a GitHub Enterprise Server. openid-client drives it from metadata given here (GitHub publishes none):
// the authorization code flow with state and PKCE (RFC 7636, S256), then the person from the REST API's /user and
// /user/emails. Every call goes through upstreamFetch, the webhook address guard.
import {
  authorizationCodeGrant,
  buildAuthorizationUrl,
  calculatePKCECodeChallenge,
  ClientSecretPost,
  Configuration,
  customFetch,
  fetchProtectedResource,
  None,
  randomPKCECodeVerifier,
} from 'openid-client';
import type { Context } from '../../context.ts';
import { DEFAULT_WEBHOOK_SETTINGS } from '../../push/destination.ts';
import { answeredAt } from './oidc.protocol.ts';
import { callbackUrl, type LoadedConnection, type SsoProtocol } from './protocol.ts';
import { SsoSignInError } from './sso.errors.ts';
import { cleanEmail, cleanText, signInFailure, storableClaims } from './upstream-answer.ts';
import { upstreamFetch } from '../../push/guarded-fetch.ts';

export const GITHUB_ORIGIN = 'https://github.com';
/** What reads the profile and every address with its verification (GitHub's OAuth scopes). */
export const DEFAULT_GITHUB_SCOPES = ['read:user', 'user:email'];

/** The server's origin and its REST API: api.github.com for github.com, <origin>/api/v3 on GitHub Enterprise Server. */
export function githubServer(issuer: string | null): { origin: string; api: string } {
  let url: URL;
  try {
    url = new URL(issuer ?? GITHUB_ORIGIN);
  } catch {
    throw new SsoSignInError('idp_error', "This connection's GitHub server is not a URL");
  }
  return { origin: url.origin, api: url.origin === GITHUB_ORIGIN ? 'https://api.github.com' : `${url.origin}/api/v3` };
}

function configurationFor(ctx: Context, connection: LoadedConnection): Configuration {
  if (!connection.clientId) throw new SsoSignInError('idp_error', 'This connection has no client id');
  const { origin } = githubServer(connection.issuer);
  const settings = ctx.settings.webhooks ?? DEFAULT_WEBHOOK_SETTINGS;
  const config = new Configuration(
    {
      issuer: origin,
      authorization_endpoint: `${origin}/login/oauth/authorize`,
      token_endpoint: `${origin}/login/oauth/access_token`,
    },
    connection.clientId,
    connection.clientSecret ? { client_secret: connection.clientSecret } : undefined,
    // GitHub reads the client's credentials from the form body.
    connection.clientSecret ? ClientSecretPost(connection.clientSecret) : None(),
  );
  config[customFetch] = upstreamFetch(settings);
  config.timeout = Math.ceil(settings.timeoutMs / 1000) + 1;
  return config;
}

interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}

/** GET <api><path> with the access token, as JSON; what is not a 200 with JSON is the provider's failure. */
async function apiGet(
  config: Configuration,
  api: string,
  accessToken: string,
  path: string,
): Promise<{ status: number; body: unknown }> {
  const response = await fetchProtectedResource(
    config,
    accessToken,
    new URL(`${api}${path}`),
    'GET',
    undefined,
    new Headers({ accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' }),
  );
  if (response.status !== 200) return { status: response.status, body: undefined };
  try {
    return { status: 200, body: await response.json() };
  } catch {
    throw new SsoSignInError('invalid_response', "The identity provider's answer was not valid");
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const githubProtocol: SsoProtocol = {
  async depart(ctx, connection, state, hints) {
    const config = configurationFor(ctx, connection);
    const codeVerifier = randomPKCECodeVerifier();
    const parameters: Record<string, string> = {
      redirect_uri: callbackUrl(ctx, connection.id),
      scope: (connection.scopes.length ? connection.scopes : DEFAULT_GITHUB_SCOPES).join(' '),
      state,
      code_challenge: await calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    };
    // GitHub's hint is a user name (`login`), not an address.
    if (hints.loginHint && !hints.loginHint.includes('@')) parameters.login = hints.loginHint;
    return { url: buildAuthorizationUrl(config, parameters).href, codeVerifier };
  },

  async arrive(ctx, connection, request, answer) {
    if (!request.codeVerifier) throw new SsoSignInError('invalid_response', 'This sign-in was not started for GitHub');
    const current = answeredAt(ctx, connection, answer.callbackUrl);
    const config = configurationFor(ctx, connection);
    const { api } = githubServer(connection.issuer);
    try {
      const tokens = await authorizationCodeGrant(config, current, {
        expectedState: request.id,
        pkceCodeVerifier: request.codeVerifier,
      });
      const user = await apiGet(config, api, tokens.access_token, '/user');
      if (!isRecord(user.body)) {
        throw new SsoSignInError(
          'idp_error',
          `The identity provider did not return the person${user.status !== 200 ? ` (HTTP ${user.status})` : ''}`,
        );
      }
      const id = user.body.id;
      if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0)
        throw new SsoSignInError('invalid_response', "The identity provider's user id is not usable");
      // Without the user:email scope GitHub answers 404 (or 403) here: the person then has no address Tessera can trust.
      const listed = await apiGet(config, api, tokens.access_token, '/user/emails');
      const emails: GithubEmail[] = Array.isArray(listed.body)
        ? listed.body.filter(isRecord).flatMap((e) => {
            const email = cleanEmail(e.email);
            return email ? [{ email, primary: e.primary === true, verified: e.verified === true }] : [];
          })
        : [];
      const primary = emails.find((e) => e.primary);
      const email = primary?.email ?? cleanEmail(user.body.email);
      const login = cleanText(user.body.login, 100);
      const name = cleanText(user.body.name);
      return {
        subject: String(id),
        email,
        emailVerified: primary?.verified === true,
        name: name ?? login,
        roleValues: [],
        amr: [],
        claims: storableClaims({
          id,
          login: user.body.login,
          name: user.body.name,
          email: user.body.email,
          emails: listed.body ?? [],
        }) as Record<string, unknown>,
      };
    } catch (error) {
      throw signInFailure(error);
    }
  },
};
