// What an identity provider's answer becomes in Tessera's words (docs/architecture.md#single-sign-on): openid-client's
// failures as SsoSignInError with a reason and a message safe to show, and the provider's text as text that a page,
// PostgreSQL text and jsonb can hold. Nothing the provider sent reaches a person unsanitized.
import {
  AuthorizationResponseError,
  ClientError,
  ResponseBodyError,
  WWWAuthenticateChallengeError,
} from 'openid-client';
import { SsoSignInError } from './sso.errors.ts';
import { upstreamFetchErrorIn } from '../../push/guarded-fetch.ts';

export const UNREACHABLE = 'The identity provider could not be reached';

/**
 * A provider's string as text to show or store: control and format characters (NUL, escapes, bidi overrides) gone,
 * ill-formed UTF-16 repaired, blanks collapsed, at most `max` characters; empty is null.
 */
export function cleanText(value: unknown, max = 200): string | null {
  if (typeof value !== 'string') return null;
  const text = value
    .toWellFormed()
    .replace(/[\p{Cc}\p{Cf}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return text ? text.slice(0, max) : null;
}

/** An address as the provider gave it, or null when it cannot be one (blanks, control characters, no @). */
export function cleanEmail(value: unknown): string | null {
  if (
    typeof value !== 'string' ||
    value.length > 320 ||
    /[\p{Cc}\p{Cf}\s]/u.test(value) ||
    value !== value.toWellFormed()
  )
    return null;
  return /^[^@]+@[^@]+$/.test(value) ? value : null;
}

/**
 * Claims as jsonb can hold them: a NUL (which PostgreSQL refuses in text and jsonb) becomes U+FFFD and ill-formed
 * UTF-16 is repaired, in keys and values, at any depth (bounded).
 */
export function storableClaims(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return value.replaceAll('\u0000', '\uFFFD').toWellFormed();
  if (depth > 20 || value === null || typeof value !== 'object')
    return typeof value === 'number' || typeof value === 'boolean' || value === null ? value : undefined;
  if (Array.isArray(value)) return value.map((v) => storableClaims(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [storableClaims(k) as string, storableClaims(v, depth + 1)]),
  );
}

/** The provider's own refusal (RFC 6749 4.1.2.1, 5.2): its error code and description, sanitized. */
export function idpRefusal(error: unknown, description?: unknown): SsoSignInError {
  const code = cleanText(error, 64) ?? 'error';
  const detail = cleanText(description, 200);
  return new SsoSignInError(
    'idp_error',
    `The identity provider refused the sign-in: ${code}${detail ? ` (${detail})` : ''}`,
  );
}

const invalid = (what: string) => new SsoSignInError('invalid_response', `The identity provider's ${what}`);

/** The check that failed inside openid-client, named from its error code and its cause (oauth4webapi's). */
function fromClientError(error: ClientError): SsoSignInError {
  const inner = error.cause instanceof Error ? error.cause : undefined;
  const detail = (inner?.cause ?? error.cause) as
    { claim?: unknown; body?: { error?: unknown; error_description?: unknown }; status?: unknown } | undefined;
  const message = inner?.message ?? error.message;
  switch (error.code) {
    case 'OAUTH_JWT_CLAIM_COMPARISON_FAILED':
      if (detail?.claim === 'iss') return invalid('token came from another issuer');
      if (detail?.claim === 'nonce') return invalid('token nonce did not match this sign-in');
      if (detail?.claim === 'aud' || detail?.claim === 'azp')
        return invalid('token was meant for another client (audience)');
      return invalid('token was not valid');
    case 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED':
      return invalid('token has expired or is not yet valid');
    case 'OAUTH_KEY_SELECTION_FAILED':
      return invalid('token was not valid (signature)');
    case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED':
      return invalid('answers did not agree with each other');
    case 'OAUTH_RESPONSE_IS_NOT_CONFORM': {
      const status = (error.cause as { status?: unknown } | undefined)?.status;
      return new SsoSignInError(
        'idp_error',
        `The identity provider answered with an error${typeof status === 'number' ? ` (HTTP ${status})` : ''}`,
      );
    }
    case 'OAUTH_TIMEOUT':
    case 'OAUTH_ABORT':
      return new SsoSignInError('idp_error', UNREACHABLE);
    case 'OAUTH_INVALID_RESPONSE':
      if (/signature/i.test(message)) return invalid('token was not valid (signature)');
      if (/"state"/.test(message)) return invalid('answer belongs to another sign-in (state)');
      if (/"iss"/.test(message)) return invalid('answer came from another issuer');
      // GitHub answers a refused code with 200 and an OAuth error body.
      if (typeof detail?.body?.error === 'string') return idpRefusal(detail.body.error, detail.body.error_description);
      return invalid('answer was not valid');
    default:
      return invalid('answer was not valid');
  }
}

/** Any failure of a call to the provider or of a check of its answer, as the sign-in's refusal. */
export function signInFailure(error: unknown): SsoSignInError {
  if (error instanceof SsoSignInError) return error;
  const fetchError = upstreamFetchErrorIn(error);
  if (fetchError)
    return fetchError.kind === 'too_large'
      ? invalid('answer was too large')
      : new SsoSignInError('idp_error', UNREACHABLE);
  if (error instanceof AuthorizationResponseError) return idpRefusal(error.error, error.error_description);
  if (error instanceof ResponseBodyError) return idpRefusal(error.error, error.error_description);
  if (error instanceof WWWAuthenticateChallengeError)
    return new SsoSignInError('idp_error', 'The identity provider refused the access token');
  if (error instanceof ClientError) return fromClientError(error);
  return invalid('answer was not valid');
}
