// What an error is, decided in one place for every interface (docs/architecture.md#errors): the REST and OAuth
// error middleware, /graphql's masking, the portal bridge and the in-process executor each ask here, then answer
// in their own shape.
import { GraphQLError } from 'graphql';
import { DomainError, NotFoundError } from '../../schema/errors/index.ts';
import { isDatabaseUnavailable, ServiceUnavailableError } from '../../schema/errors/unavailable.ts';

export type ErrorClass =
  /** A refusal of ours, with its stable code and a message safe to show. */
  | { kind: 'domain'; error: DomainError }
  /** The client's request itself is wrong (not JSON, too large, variables that do not fit): its code and words. */
  | { kind: 'request'; code: string; message: string }
  /** The database is down or saturated: 503 with Retry-After (docs/architecture.md#hot-paths). */
  | { kind: 'unavailable'; error: ServiceUnavailableError }
  /** Anything else is ours: logged, and answered with a generic message. */
  | { kind: 'internal'; cause: unknown };

/** Koa's and body-parser's HTTP errors that are the client's: their code, and what the answer says. */
const HTTP_REQUEST_ERRORS: Record<number, { code: string; message?: string }> = {
  400: { code: 'invalid_request', message: 'The request body is not valid JSON' },
  404: { code: 'not_found' },
  405: { code: 'method_not_allowed' },
  413: { code: 'payload_too_large', message: 'The request body is too large' },
  415: { code: 'unsupported_media_type' },
};

// A body whose Content-Encoding does not decode (gzip that is not gzip): zlib's errors carry no status.
// Brotli's decoder errors are coded ERR__ERROR_FORMAT_... or ERR_BROTLI_....
const UNDECODABLE_BODY = /^(Z_|ERR__ERROR_|ERR_BROTLI_)/;

/**
 * Says what `error` is. A GraphQL error is judged by what its resolver threw (`originalError`); one that graphql
 * raised itself is the client's when it came before execution (see isRequestError), else ours.
 */
export function classifyError(error: unknown): ErrorClass {
  const thrown = error instanceof GraphQLError && !(error instanceof DomainError) ? error.originalError : error;
  const domain = asDomainError(thrown);
  if (domain) return { kind: 'domain', error: domain };
  if (error instanceof GraphQLError) {
    if (isRequestError(error)) return { kind: 'request', code: 'invalid_request', message: error.message };
  } else {
    const status = (error as { status?: number } | null)?.status;
    const known = status && status < 500 ? HTTP_REQUEST_ERRORS[status] : undefined;
    if (known) return { kind: 'request', code: known.code, message: known.message ?? (error as Error).message };
    if (UNDECODABLE_BODY.test((error as { code?: string } | null)?.code ?? '')) {
      return {
        kind: 'request',
        code: 'invalid_request',
        message: 'The request body could not be decoded (Content-Encoding)',
      };
    }
  }
  if (isDatabaseUnavailable(thrown)) return { kind: 'unavailable', error: new ServiceUnavailableError() };
  return { kind: 'internal', cause: thrown ?? error };
}

/**
 * What a resolver threw, as the DomainError it stands for. A write whose record was deleted by a concurrent
 * request after the service read it (Prisma's P2025: "required but not found") is not found, as it would have
 * been a moment earlier, not a failure of ours.
 */
function asDomainError(thrown: unknown): DomainError | undefined {
  if (thrown instanceof DomainError) return thrown;
  if ((thrown as { code?: unknown } | null)?.code === 'P2025') return new NotFoundError();
  return undefined;
}

/**
 * An error graphql itself raised before execution (no path) about what the client sent: a variable of the wrong
 * type or an unknown input field. Its message is written for the client; graphql wraps the scalar's complaint
 * (a GraphQLError again) as originalError, which is why such errors looked internal.
 */
function isRequestError(error: GraphQLError): boolean {
  return !error.path && (!error.originalError || error.originalError instanceof GraphQLError);
}
