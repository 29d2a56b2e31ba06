// Refusals of single sign-on (docs/architecture.md#single-sign-on): domains, connections and sign-ins through them.
import { ConflictError, ForbiddenError, UserError, ValidationError } from '../../errors/index.ts';
import type { UserErrorCode } from '../../errors/codes.ts';

/**
 * Who controls sign-in controls the organization (docs/architecture.md#single-sign-on): a domain, a connection or a
 * directory token decides who signs in as whom, so only owners make, change or delete them; admins read them.
 */
export class SignInOwnersOnlyError extends ForbiddenError {
  constructor() {
    super('Only owners change how people sign in: domains, connections and directory tokens');
  }
}

/** Another organization has already proven this domain. */
export class DomainTakenError extends UserError {
  static readonly code = 'domain_taken';
  constructor(domain: string) {
    super(DomainTakenError.code, `${domain} is already verified by another organization`);
  }
}

/** The TXT record was not found: the message says what was, so that a person can fix their DNS. */
export class VerificationFailedError extends UserError {
  static readonly code = 'verification_failed';
  readonly found: string[];
  constructor(name: string, expected: string, found: string[], problem?: string) {
    const saw =
      problem ?? (found.length ? `found ${found.map((v) => JSON.stringify(v)).join(', ')}` : 'found no TXT record');
    super(VerificationFailedError.code, `No TXT record ${JSON.stringify(expected)} at ${name}: ${saw}`, [
      { path: 'domain', message: saw },
    ]);
    this.found = found;
  }
}

/** A connection may serve only its organization's verified domains. */
export class UnverifiedDomainError extends ValidationError {
  constructor(domain: string) {
    super(`${domain} is not a verified domain of this organization`, [
      { path: 'domains', message: `${domain} is not verified here` },
    ]);
  }
}

export class DomainInUseError extends ConflictError {
  constructor(domain: string) {
    super(`${domain} is already served by another connection`);
  }
}

/**
 * Why a sign-in through an identity provider did not succeed, stable words the sign-in page puts into its own:
 * expired_request (unknown, used or expired state), wrong_browser, disabled, idp_error, invalid_response (a token or
 * assertion that failed validation), no_email, unverified_email, email_outside_domains, account_exists,
 * identity_in_use (the provider's account is another person's), sso_required (a platform-wide provider for an address
 * whose domain requires its organization's connection).
 */
export type SsoRefusalReason =
  | 'expired_request'
  | 'wrong_browser'
  | 'disabled'
  | 'idp_error'
  | 'invalid_response'
  | 'no_email'
  | 'unverified_email'
  | 'email_outside_domains'
  | 'account_exists'
  | 'identity_in_use'
  | 'sso_required';

/** What a sign-in was for when not for signing in: connecting a provider to an account, or an admin's test. */
export type SsoPurpose = 'link' | 'test';

/**
 * A sign-in through an identity provider that did not succeed, with its `reason`. GraphQL clients read the reason (and
 * the purpose) in the details; the browser's steps (server/sso) read the fields.
 */
export class SsoSignInError extends UserError {
  static readonly code = 'sso_failed';
  readonly reason: SsoRefusalReason;
  /**
   * What the sign-in was for, as its stored request says: the refusal then ends where that started, also for a SAML
   * answer, whose cross-site POST carries no cookie to say so.
   */
  readonly purpose: SsoPurpose | null;
  constructor(reason: SsoRefusalReason, message: string, purpose: SsoPurpose | null = null) {
    super(SsoSignInError.code, message, [
      { path: 'reason', message: reason },
      ...(purpose ? [{ path: 'purpose', message: purpose }] : []),
    ]);
    this.reason = reason;
    this.purpose = purpose;
  }

  /** The same refusal, saying what the sign-in was for. */
  for(purpose: SsoPurpose): SsoSignInError {
    return new SsoSignInError(this.reason, this.message, purpose);
  }
}

/** The issuer could not be reached or gave no usable discovery document. */
export class IssuerUnreachableError extends UserError {
  static readonly code = 'issuer_unreachable';
  constructor(detail: string) {
    super(IssuerUnreachableError.code, `The identity provider could not be reached: ${detail}`, [
      { path: 'issuer', message: detail },
    ]);
  }
}

/** The codes a UserError of this domain's mutations can carry (SsoErrorCode in schema.graphql). */
export const SSO_ERROR_CODES: readonly UserErrorCode[] = [
  'invalid_request',
  'conflict',
  'invalid_credentials',
  'domain_taken',
  'verification_failed',
  'sso_required',
  'sso_failed',
  'issuer_unreachable',
];
