// The authorization endpoint (OAuth 2.0 4.1.1, OIDC Core 3.1.2) as named steps in order, one file each under
// authorize/. Until the client and its redirect URI are trusted, errors are shown on a page (never redirected: no
// open redirect); after that they go back to the client with error, error_description, state and iss (RFC 9207).
// With a session the whole request is two statements: one read (authorize/load.ts), one write (issue-code.ts).
import type { Context } from '../../context.ts';
import { findEnabledClient } from './enabled-client.ts';
import { AccessDenied, AuthorizePageError, InvalidClient, InvalidRequest, OAuthError } from './oauth.errors.ts';
import { describeScope } from './scopes.ts';
import { loadAuthorization } from './authorize/load.ts';
import { checkClient } from './authorize/check-client.ts';
import { checkRedirectUri, redirectUriRegistered } from './authorize/check-redirect-uri.ts';
import { rejectRepeated } from './authorize/reject-repeated.ts';
import { checkResponseType } from './authorize/check-response-type.ts';
import { checkScope } from './authorize/check-scope.ts';
import { checkResources } from './authorize/check-resources.ts';
import { requireResourcesAllowed } from './resources.ts';
import { checkStateAndNonce } from './authorize/check-state-nonce.ts';
import { checkPkce } from './authorize/check-pkce.ts';
import { checkPrompt } from './authorize/check-prompt.ts';
import { checkIdTokenHint } from './authorize/check-id-token-hint.ts';
import { requireLogin } from './authorize/require-login.ts';
import { NOT_ALLOWED, requireMetadataAllowed } from './authorize/require-metadata-allowed.ts';
import { requireMembership } from './authorize/require-membership.ts';
import { requireLicenses } from './authorize/require-licenses.ts';
import { requireConsent } from './authorize/require-consent.ts';
import { issueCode } from './authorize/issue-code.ts';
import { readConsentRequest, type ConsentRequest } from './authorize/consent-request.ts';
import { recordApproval, recordDenial } from './authorize/record-decision.ts';
import {
  splitParams,
  withParams,
  type AuthorizationRequest,
  type AuthorizeOutcome,
  type BrowserSession,
  type RawParams,
} from './authorize/request.ts';
import { ssoRouteForDomain } from '../auth/home-realm.ts';
import { domainOf } from '../../lib/email.ts';
import { UnauthenticatedError } from '../../errors/index.ts';
import { isMetadataClientId, MetadataDocumentRefused, refreshMetadataClient } from '../clients/metadata-document.ts';

export { CODE_TTL_SECONDS } from './authorize/issue-code.ts';
export { pkceMatches } from './authorize/check-pkce.ts';
export type { AuthorizationRequest, AuthorizeOutcome, BrowserSession, RawParams } from './authorize/request.ts';

/** `sessionToken` is the browser's session cookie (or null): the session is read with the client, in one statement. */
export async function authorize(ctx: Context, raw: RawParams, sessionToken: string | null): Promise<AuthorizeOutcome> {
  const split = splitParams(raw);
  const p = split.params;
  const metadataClients = ctx.settings.metadataClients === true;
  if (metadataClients && isMetadataClientId(p.client_id)) await readMetadataClient(ctx, p.client_id);
  const loaded = await loadAuthorization(ctx, p.client_id, sessionToken, p.scope);
  const client = checkClient(loaded.client, split, metadataClients);
  const redirectUri = checkRedirectUri(client, split);
  try {
    rejectRepeated(split);
    checkResponseType(client, p);
    const request: AuthorizationRequest = {
      clientId: client.clientId,
      redirectUri,
      scope: checkScope(client, p),
      resources: checkResources(client, split),
      ...checkStateAndNonce(p),
      ...checkPkce(client, p),
      ...checkPrompt(p),
      idTokenHint: p.id_token_hint ?? null,
      loginHint: p.login_hint ? p.login_hint.slice(0, 254) : null,
    };
    const hintedSubject = await checkIdTokenHint(ctx, request.idTokenHint, client.clientId);
    const login = requireLogin(ctx, request, loaded.session, hintedSubject, p, loaded);
    if (login) return login.again === 'enrol' ? login : homeRealm(ctx, login, p.domain_hint ?? request.loginHint);
    // requireLogin passes a request on only with a session.
    const session = loaded.session;
    if (!session) throw new Error('authorize: requireLogin passed a request without a session');
    requireMetadataAllowed(client, loaded.metadataAllowed);
    // A metadata document's client may ask for the resources of the organization it acts in (check-resources.ts).
    if (client.metadataDocument) requireResourcesAllowed(request.resources, client.resources);
    requireMembership(loaded.member);
    requireLicenses(request, loaded.licensed);
    const consent = await requireConsent(ctx, client, request, session, loaded.consentScopes);
    if (consent) return consent;
    const url = await issueCode(ctx, client, request, session);
    if (url) return { kind: 'redirect', url };
    // The session ended since it was read: answered as without one.
    const signIn = requireLogin(ctx, request, null, hintedSubject, p, loaded);
    if (!signIn) throw new Error('authorize: requireLogin passed a request without a session');
    return homeRealm(ctx, signIn, p.domain_hint ?? request.loginHint);
  } catch (error) {
    if (error instanceof OAuthError)
      return { kind: 'redirect', url: errorRedirect(ctx, redirectUri, error, p.state ?? null) };
    throw error;
  }
}

/** The client row of the metadata document at `clientId`, current; a document that cannot be used stays on our page. */
async function readMetadataClient(ctx: Context, clientId: string): Promise<void> {
  try {
    await refreshMetadataClient(ctx, clientId);
  } catch (error) {
    if (error instanceof MetadataDocumentRefused)
      throw new AuthorizePageError(
        new InvalidClient(`The application's metadata document cannot be used: ${error.message}`),
      );
    throw error;
  }
}

/**
 * Home-realm discovery: a login_hint (or domain_hint) whose domain an organization's connection serves goes
 * straight to that identity provider (docs/architecture.md#single-sign-on).
 */
async function homeRealm(
  ctx: Context,
  login: Extract<AuthorizeOutcome, { kind: 'login' }>,
  hint: string | null | undefined,
) {
  const route = hint ? await ssoRouteForDomain(ctx, domainOf(hint.slice(0, 254))) : null;
  return route ? { ...login, sso: route.connectionId } : login;
}

function errorRedirect(ctx: Context, redirectUri: string, error: OAuthError, state: string | null): string {
  return withParams(redirectUri, {
    error: error.code,
    error_description: error.message,
    state,
    iss: ctx.settings.issuer(),
  });
}

export interface ConsentPrompt {
  /** `unregisteredHost`: the host of a client known only by its metadata document, which the page warns of. */
  client: { name: string; description: string; unregisteredHost: string | null };
  organization: { name: string };
  scopes: { name: string; description: string }[];
  /** The resources (RFC 8707) the tokens are to be for; none: the application itself. */
  resources: string[];
}

/**
 * The client a consent request names, with the organization its grant acts in: the client's own, or for a metadata
 * document's client the one the request was made in (while the platform allows such clients at all).
 */
async function consentingClient(ctx: Context, consent: ConsentRequest) {
  const client = await findEnabledClient(ctx, consent.req.clientId);
  if (!client.metadataDocument) return client;
  if (!ctx.settings.metadataClients || !consent.org) throw new InvalidClient();
  return { ...client, organizationId: consent.org };
}

/** What the consent page shows: the application, its organization, the scopes in words. */
export async function describeConsentRequest(ctx: Context, token: string, userId: string): Promise<ConsentPrompt> {
  const payload = await readConsentRequest(ctx, token, userId);
  const client = await consentingClient(ctx, payload);
  const org = await ctx.db.organization.findUniqueOrThrow({
    where: { id: client.organizationId },
    select: { name: true },
  });
  return {
    client: {
      name: client.name,
      description: client.description,
      unregisteredHost: client.metadataDocument ? new URL(client.clientId).host : null,
    },
    organization: org,
    scopes: payload.req.scope.map((name) => ({ name, description: describeScope(name) })),
    // A consent request signed before resources were kept names none.
    resources: payload.req.resources ?? [],
  };
}

/** The user's answer on the consent page: a redirect back to the client with a code, or access_denied. */
export async function decideConsent(
  ctx: Context,
  token: string,
  session: BrowserSession,
  approve: boolean,
): Promise<string> {
  const consent = await readConsentRequest(ctx, token, session.userId);
  const request = consent.req;
  const client = await consentingClient(ctx, consent);
  if (!redirectUriRegistered(client.redirectUris, request.redirectUri))
    throw new InvalidRequest('redirect_uri not registered');
  // The sign-in the request was made under, not a newer one.
  const signIn = {
    userId: session.userId,
    sessionId: session.sessionId,
    authTime: new Date(consent.auth_time * 1000),
    amr: consent.amr ?? [],
  };
  const back = (error: OAuthError) => errorRedirect(ctx, request.redirectUri, error, request.state);
  let answered: string | null;
  if (approve) {
    const approval = await recordApproval(ctx, client, consent, signIn);
    // Ended while the request ran (the session was checked when it came in): nothing was written.
    if (!approval.live) throw new UnauthenticatedError('Your session has ended: sign in again');
    // Left the organization since the page was shown, or it stopped allowing such clients: as at the authorization
    // endpoint (require-membership, require-metadata-allowed).
    answered = approval.member
      ? approval.redirect
      : back(client.metadataDocument ? new AccessDenied(NOT_ALLOWED) : new InvalidClient());
  } else {
    answered = (await recordDenial(ctx, client, consent, session.userId)) ? back(new AccessDenied()) : null;
  }
  if (!answered)
    throw new InvalidRequest('This consent request has already been answered: start again from the application');
  return answered;
}
