// The marketplace's refusals, each with a stable code: conflicts (409) and an app that did not take its credentials.
import { ConflictError, UserError } from '../../errors/index.ts';

export class AppInstalledError extends ConflictError {
  constructor() {
    super('The app is installed in at least one organization: it cannot be deleted until every installation is removed');
  }
}

export class AlreadyInstalledError extends ConflictError {
  constructor() {
    super('The app is already installed in this organization');
  }
}

/** The install push was refused, timed out or could not be sent: nothing was installed. REST answers 502. */
export class AppUnreachableError extends UserError {
  constructor(reason: string) {
    super('app_unreachable', `The app did not accept the installation (${reason}); nothing was installed`);
  }
}
