// The one table from an error code to an HTTP status, and the one error body: RFC 6749 style
// {"error", "error_description"} plus `details` for field problems (docs/architecture.md#errors).
import type Koa from 'koa';
import { ServiceUnavailableError } from '../../schema/errors/unavailable.ts';

export const STATUS_BY_CODE: Record<string, number> = {
  invalid_request: 400,
  invalid_credentials: 401,
  unauthenticated: 401,
  invalid_client: 401,
  invalid_token: 401,
  invalid_grant: 400,
  invalid_scope: 400,
  // A resource (RFC 8707 2) not registered for the client.
  invalid_target: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  unsupported_response_type: 400,
  // The device_code grant's polling answers (RFC 8628 3.5).
  authorization_pending: 400,
  slow_down: 400,
  expired_token: 400,
  access_denied: 403,
  forbidden: 403,
  insufficient_scope: 403,
  mfa_enrollment_required: 403,
  // A password for an address whose organization signs in through its identity provider (docs/architecture.md#single-sign-on).
  sso_required: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  // Single sign-on's domain checks (docs/architecture.md#single-sign-on): the TXT record was not found, or another
  // organization proved the domain first.
  verification_failed: 409,
  domain_taken: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  // A marketplace app that did not take its credentials (docs/architecture.md#marketplace).
  app_unreachable: 502,
  service_unavailable: 503,
};

export interface ErrorBody {
  error: string;
  error_description: string;
  details?: { path: string; message: string }[];
  /** What kind of refusal a 403 is, where a client acts on it: `first_party_only` (docs/architecture.md#authorization). */
  reason?: string;
}

/** RFC 6750 3: no error attribute when no credentials were given; the code otherwise. */
function challenge(code: string, description: string): string {
  if (code === 'unauthenticated') return 'Bearer realm="tessera"';
  const attr = code === 'invalid_credentials' ? 'invalid_token' : code;
  return `Bearer realm="tessera", error="${attr}", error_description="${description.replace(/["\\]/g, '')}"`;
}

export function sendError(
  ctx: Koa.Context,
  code: string,
  description: string,
  extra: {
    details?: ErrorBody['details'];
    retryAfter?: number;
    scope?: string;
    reason?: string;
    status?: number | undefined;
  } = {},
) {
  const status = extra.status ?? STATUS_BY_CODE[code] ?? 400;
  ctx.status = status;
  if (status === 401) ctx.set('WWW-Authenticate', challenge(code, description));
  // RFC 6750 3.1: the token is good but lacks the scope, which the challenge names.
  if (code === 'insufficient_scope')
    ctx.set('WWW-Authenticate', `Bearer error="insufficient_scope", scope="${extra.scope ?? 'api'}"`);
  if (extra.retryAfter !== undefined) ctx.set('Retry-After', String(extra.retryAfter));
  ctx.set('Cache-Control', 'no-store');
  const body: ErrorBody = { error: code, error_description: description };
  if (extra.details?.length) body.details = extra.details;
  if (extra.reason) body.reason = extra.reason;
  ctx.body = body;
}

/** 503 with Retry-After: the database is down or saturated (schema/errors/unavailable.ts). */
export function sendUnavailable(ctx: Koa.Context): void {
  const error = new ServiceUnavailableError();
  sendError(ctx, error.code, error.message, { retryAfter: error.retryAfterSeconds });
}
