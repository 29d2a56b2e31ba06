// Refusals of the SCIM protocol layer (RFC 7644 3.12), each with the status and scimType /scim/v2 answers with
// (responses.ts). A service's own refusals are directory.errors.ts's.
import { ValidationError } from '../../schema/errors/index.ts';

/** A refusal of the protocol layer itself (no token, no such endpoint, a body that is not JSON). */
export class ScimHttpError extends Error {
  readonly status: number;
  readonly scimType: string | undefined;
  readonly headers: Record<string, string>;
  constructor(status: number, detail: string, scimType?: string, headers: Record<string, string> = {}) {
    super(detail);
    this.status = status;
    this.scimType = scimType;
    this.headers = headers;
  }
}

/** A filter this service provider cannot run (RFC 7644 3.12 invalidFilter): answered 400. */
export class ScimInvalidFilterError extends ValidationError {
  readonly scimType = 'invalidFilter';
  constructor(message: string) {
    super(message, [{ path: 'filter', message }]);
  }
}

export type PatchScimType =
  'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'mutability' | 'invalidFilter';

/** A PATCH this service provider cannot apply, with its RFC 7644 3.12 error type: answered 400. */
export class ScimPatchError extends ValidationError {
  readonly scimType: PatchScimType;
  constructor(scimType: PatchScimType, message: string, path = 'Operations') {
    super(message, [{ path, message }]);
    this.scimType = scimType;
  }
}
