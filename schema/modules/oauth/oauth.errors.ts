// One class per OAuth 2.0 error code, each with a safe default description. The texts the interface fixes
// ("Client not found", ...) are the defaults here, so every endpoint says the same words.
import { DomainError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

export class OAuthError extends DomainError {
  /** The HTTP status, where it is not the one of the code's (server/errors/http.ts). */
  readonly status?: number;
  constructor(code: string, description: string) {
    super(code, description);
  }
}

export class InvalidRequest extends OAuthError {
  constructor(description = 'The request is missing a parameter or has an invalid one') {
    super('invalid_request', description);
  }
}
export class InvalidClient extends OAuthError {
  constructor(description = 'Client not found') {
    super('invalid_client', description);
  }
}
export class InvalidGrant extends OAuthError {
  constructor(description = 'Authorization code has expired') {
    super('invalid_grant', description);
  }
}
export class InvalidScope extends OAuthError {
  constructor(description = 'Requested scope not allowed') {
    super('invalid_scope', description);
  }
}
/** RFC 8707 2: a resource that is not an absolute URI, or not one this client may ask tokens for. */
export class InvalidTarget extends OAuthError {
  constructor(description = 'The resource is not one this client may ask tokens for') {
    super('invalid_target', description);
  }
}
export class InvalidToken extends OAuthError {
  constructor(description = 'Access token is invalid or expired') {
    super('invalid_token', description);
  }
}
export class UnauthorizedClient extends OAuthError {
  constructor(description = 'This client may not use this grant type') {
    super('unauthorized_client', description);
  }
}
export class UnsupportedGrantType extends OAuthError {
  constructor(description = 'The grant type is not supported') {
    super('unsupported_grant_type', description);
  }
}
export class UnsupportedResponseType extends OAuthError {
  constructor(description = 'Only response_type=code is supported') {
    super('unsupported_response_type', description);
  }
}
export class AccessDenied extends OAuthError {
  constructor(description = 'The user denied the request') {
    super('access_denied', description);
  }
}
export class LoginRequired extends OAuthError {
  constructor(description = 'The user must sign in') {
    super('login_required', description);
  }
}
export class ConsentRequired extends OAuthError {
  constructor(description = 'The user must approve this application') {
    super('consent_required', description);
  }
}

/** RFC 7591 3.2.2: a redirect URI refused at registration, or any other client metadata. */
export class InvalidClientMetadata extends OAuthError {
  constructor(
    description: string,
    code: 'invalid_client_metadata' | 'invalid_redirect_uri' = 'invalid_client_metadata',
  ) {
    super(code, description);
  }
}

/** An error shown on our own page because the client or its redirect URI cannot be trusted. */
export class AuthorizePageError extends OAuthError {
  constructor(error: OAuthError) {
    super(error.code, error.message);
  }
}

/** The codes a UserError of this domain's mutations can carry (OAuthErrorCode in schema.graphql). */
export const OAUTH_ERROR_CODES: readonly UserErrorCode[] = ['invalid_request', 'sso_required'];
