// Client management's refusals, each with a stable code: a client the caller may not see is not found (another
// tenant's id answers 404, docs/architecture.md#tenancy-and-roles), and a client that redirects needs a redirect URI.
import { ForbiddenError, NotFoundError, ValidationError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

export class OAuthClientNotFound extends NotFoundError {
  constructor() {
    super('OAuth client');
  }
}

/** An initial access token (registration.service.ts) the caller may not see, or that is gone. */
export class RegistrationTokenNotFound extends NotFoundError {
  constructor() {
    super('Registration token');
  }
}

/** A user's connected app (a remembered consent) that is not there. */
export class ConnectedAppNotFound extends NotFoundError {
  constructor() {
    super('Connected app');
  }
}

/** The field problem of a client that uses the authorization_code grant without a redirect URI. */
export const REDIRECT_URI_REQUIRED = 'at least one is needed for the authorization_code grant';

export class RedirectUriRequired extends ValidationError {
  constructor() {
    super('The request is invalid', [{ path: 'redirectUris', message: REDIRECT_URI_REQUIRED }]);
  }
}

/** A public client keeps no secret: there is none to rotate (docs/architecture.md#apps-without-secrets). */
export class PublicClientHasNoSecret extends ValidationError {
  constructor() {
    super('A public client has no secret to rotate', [
      { path: 'tokenEndpointAuthMethod', message: 'is none: the client keeps no secret' },
    ]);
  }
}

/** Tessera's own command-line client (cli-client.ts) is made by Tessera: it is only turned off or on. */
export class CliClientIsTesseras extends ForbiddenError {
  constructor() {
    super("Tessera's own command-line client is managed by Tessera: it can only be disabled or enabled");
  }
}

/** The codes a UserError of this domain's mutations can carry (ClientsErrorCode in schema.graphql). */
export const CLIENTS_ERROR_CODES: readonly UserErrorCode[] = ['invalid_request'];
