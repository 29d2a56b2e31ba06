// The marketplace's refusals, each with a stable code: forbidden (403), invalid_request (400), conflicts (409) and
// an app that did not take its credentials (docs/architecture.md#marketplace).
import { ConflictError, ForbiddenError, UserError, ValidationError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/** Platform administrators register and change apps. */
export class AppWriterOnlyError extends ForbiddenError {
  constructor() {
    super('Only platform administrators register and change apps');
  }
}

/** The webhook URL fails the SSRF guard at registration or edit; `reason` is the guard's own words. */
export class WebhookUrlNotAllowedError extends ValidationError {
  constructor(reason: string) {
    super('The webhook URL is not allowed', [{ path: 'webhookUrl', message: reason }]);
  }
}

export class AppInstalledError extends ConflictError {
  constructor() {
    super(
      'The app is installed in at least one organization: it cannot be deleted until every installation is removed',
    );
  }
}

export class AlreadyInstalledError extends ConflictError {
  constructor() {
    super('The app is already installed in this organization');
  }
}

/** The install push was refused, timed out or could not be sent: nothing was installed. REST answers 502. */
export class AppUnreachableError extends UserError {
  static readonly code = 'app_unreachable';
  constructor(reason: string, url: string) {
    // The URL and the cause: the admin can tell a typo from an app that is down.
    super(
      AppUnreachableError.code,
      `The app did not accept the installation at ${url} (${reason}); nothing was installed`,
    );
  }
}

/** The codes a UserError of this domain's mutations can carry (AppsErrorCode in schema.graphql). */
export const APPS_ERROR_CODES: readonly UserErrorCode[] = ['invalid_request', 'conflict', 'app_unreachable'];
