// What a sign-in protocol (OpenID Connect, SAML 2.0, GitHub's OAuth 2.0) provides to the sign-in through a
// connection (sso.service.ts): where to send the browser, and what the returning browser's answer proves.
import type { Context, Role } from '../../context.ts';

/** A connection as the protocols need it: its secret decrypted, its SAML certificates as stored. */
export interface LoadedConnection {
  id: string;
  organizationId: string | null;
  type: 'oidc' | 'saml' | 'github';
  name: string;
  enabled: boolean;
  defaultRole: Role;
  requireSso: boolean;
  seatSubscriptionId: string | null;
  roleClaim: string | null;
  roleMap: Record<string, Role> | null;
  /** OIDC: the issuer; GitHub: the server's origin (https://github.com, or a GitHub Enterprise Server). */
  issuer: string | null;
  clientId: string | null;
  clientSecret: string | null;
  scopes: string[];
  /** SAML: the IdP's single sign-on URL (HTTP-Redirect binding), its entity id and signing certificates (PEM). */
  entryPoint: string | null;
  idpEntityId: string | null;
  idpCerts: string[];
  /** The verified domains this connection serves (lower-case), empty for a platform-wide one. */
  domains: string[];
}

/** A sign-in in flight, as the returning browser claimed it (single use). */
export interface SsoRequestState {
  id: string;
  codeVerifier: string | null;
  nonce: string | null;
  samlRequestId: string | null;
  returnTo: string | null;
  testedById: string | null;
}

/** Who the identity provider says signed in. */
export interface UpstreamProfile {
  /** OIDC sub, SAML NameID, GitHub user id: with the connection, the person's stable key. */
  subject: string;
  email: string | null;
  /** The provider vouches for the address (OIDC email_verified, GitHub's verified primary address). */
  emailVerified: boolean;
  name: string | null;
  /** The values of the connection's role_claim (OIDC claim, SAML attribute), as strings. */
  roleValues: string[];
  /** RFC 8176 methods the provider says it used (OIDC amr), if any. */
  amr: string[];
  /** Every claim or attribute received, for an admin's test sign-in. */
  claims: Record<string, unknown>;
}

export interface Departure {
  /** Where to send the browser. */
  url: string;
  /** What the request must remember for the return. */
  codeVerifier?: string;
  nonce?: string;
  samlRequestId?: string;
}

/** The browser's answer at the callback (OIDC, GitHub) or the assertion consumer service (SAML). */
export interface Answer {
  /** The full callback URL with its query (OIDC, GitHub). */
  callbackUrl?: string;
  /** The POSTed SAMLResponse (base64). */
  samlResponse?: string;
}

export interface SsoProtocol {
  /** `state` is the request's id: OIDC state, SAML RelayState. */
  depart(ctx: Context, connection: LoadedConnection, state: string, hints: { loginHint?: string }): Promise<Departure>;
  /** Validates the answer against the request; throws SsoSignInError (reason invalid_response, idp_error...). */
  arrive(
    ctx: Context,
    connection: LoadedConnection,
    request: SsoRequestState,
    answer: Answer,
  ): Promise<UpstreamProfile>;
}

/** Where an identity provider sends the browser back (docs/architecture.md#single-sign-on). */
export const callbackUrl = (ctx: Context, connectionId: string) =>
  `${ctx.settings.issuer()}/sso/${connectionId}/callback`;
export const acsUrl = (ctx: Context, connectionId: string) => `${ctx.settings.issuer()}/sso/${connectionId}/acs`;
export const metadataUrl = (ctx: Context, connectionId: string) =>
  `${ctx.settings.issuer()}/sso/${connectionId}/metadata`;
