// The /device page's refusals (device.service.ts), each with a stable code: a user code that names no pending request
// says so without telling a wrong code from a used or expired one.
import { ForbiddenError, ValidationError } from '../../errors/index.ts';

export class DeviceCodeNotFound extends ValidationError {
  constructor() {
    super('This code is wrong, already used or expired: check the code your device shows', [
      { path: 'userCode', message: 'is wrong, already used or expired' },
    ]);
  }
}

export class DeviceCodeNotMember extends ForbiddenError {
  constructor() {
    super('Your account is not a member of the organization this application belongs to');
  }
}

export class DeviceCodeNeedsSecondFactor extends ForbiddenError {
  constructor() {
    super('This organization requires a second factor: sign out, then sign in with your second factor to approve');
  }
}
