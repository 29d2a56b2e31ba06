// What the authorization endpoint's steps share: the request as validated so far, the browser's session and the
// outcomes. Problems found before the client and its redirect URI are trusted are AuthorizePageErrors (oauth.errors.ts).
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  scope: string[];
  /** The resources (RFC 8707) the tokens are to be for; none: the client itself. */
  resources: string[];
  state: string | null;
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: 'S256' | 'plain' | null;
  prompt: string[];
  maxAge: number | null;
  /** The acr values asked for (OIDC Core 3.1.2.1), voluntary: those we know, in order of preference. */
  acrValues: string[];
  idTokenHint: string | null;
  loginHint: string | null;
}

/** The signed-in browser session at the authorization endpoint, if any. */
export interface BrowserSession {
  userId: string;
  sessionId: string;
  authTime: Date;
  /** How the sign-in was made (RFC 8176), carried into the code and from it into the ID token. */
  amr: string[];
  /** The user's session version when known (it is bound into the code); else read when the code is written. */
  sessionVersion?: number;
  /** The connection whose sign-in made the session, when read (the sign-in policy asks it); null for Tessera's own. */
  connectionId?: string | null;
}

/** The client as the authorization endpoint needs it. */
export interface AuthorizeClient {
  id: string;
  clientId: string;
  organizationId: string;
  name: string;
  enabled: boolean;
  redirectUris: string[];
  allowedScopes: string[];
  grantTypes: string[];
  consentRequired: boolean;
  /** client_secret_post, or none: a public client (check-pkce.ts). */
  tokenEndpointAuthMethod: string;
  /** Known by its client ID metadata document, not registered (clients/metadata-document.ts). */
  metadataDocument: boolean;
  /**
   * The resources (RFC 8707) it may ask tokens for: its own, or for a metadata document's client those the
   * organization it acts in registered (load.ts).
   */
  resources: string[];
}

export type AuthorizeOutcome =
  | { kind: 'redirect'; url: string }
  /**
   * Send the browser to sign in, then back to the authorization endpoint with `params`: `again` when a signed-in
   * person must sign in anew (prompt=login, max_age, a second factor asked for), `enrol` when they must first set
   * up a second factor that the client's organization requires. `params` as name-value pairs: `resource` may
   * repeat (RFC 8707 2).
   */
  | {
      kind: 'login';
      params: [string, string][];
      loginHint: string | null;
      again?: 'reauth' | 'enrol';
      /** The connection that signs in the hinted address or domain (home-realm discovery): go there, not to /login. */
      sso?: string;
    }
  /** Send the browser to the consent page with this signed request. */
  | { kind: 'consent'; request: string };

/** Parameters arrive once each (RFC 6749 3.1); a repeated one is an error, but for `resource` (RFC 8707 2). */
export type RawParams = Record<string, string | string[] | undefined>;

/** The parameters given once, the names of those given more than once, and `resource` as given. */
export interface SplitParams {
  params: Record<string, string>;
  repeated: string[];
  resource: string | string[] | undefined;
}

export function splitParams(raw: RawParams): SplitParams {
  const params: Record<string, string> = {};
  const repeated: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'resource') continue;
    if (Array.isArray(value)) repeated.push(key);
    else if (value !== undefined) params[key] = value;
  }
  return { params, repeated, resource: Object.hasOwn(raw, 'resource') ? raw.resource : undefined };
}

/** `uri` with these query parameters set (null ones left out). */
export function withParams(uri: string, params: Record<string, string | null>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
  return url.toString();
}
