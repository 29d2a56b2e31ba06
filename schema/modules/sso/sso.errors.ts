// Refusals of single sign-on (docs/architecture.md#single-sign-on): domains, connections and sign-ins through them.
import { ConflictError, ForbiddenError, UserError, ValidationError } from '../../errors/index.ts';

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
  constructor(domain: string) {
    super('domain_taken', `${domain} is already verified by another organization`);
  }
}

/** The TXT record was not found: the message says what was, so that a person can fix their DNS. */
export class VerificationFailedError extends UserError {
  readonly found: string[];
  constructor(name: string, expected: string, found: string[], problem?: string) {
    const saw =
      problem ?? (found.length ? `found ${found.map((v) => JSON.stringify(v)).join(', ')}` : 'found no TXT record');
    super('verification_failed', `No TXT record ${JSON.stringify(expected)} at ${name}: ${saw}`, [
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
 * A sign-in through an identity provider that did not succeed. `reason` is stable (the sign-in page words it):
 * expired_request (unknown, used or expired state), wrong_browser, idp_error, invalid_response (a token or
 * assertion that failed validation), no_email, unverified_email, disabled, account_exists, sso_required (a platform-wide provider for an address whose
 * domain requires its organization's connection).
 */
export class SsoSignInError extends UserError {
  readonly reason: string;
  /**
   * `purpose`: what the sign-in was for when not for signing in (`link`, `test`), as its stored request says: the
   * refusal then ends where that started, also for a SAML answer, whose cross-site POST carries no cookie to say so.
   */
  constructor(reason: string, message: string, purpose?: 'link' | 'test') {
    super('sso_failed', message, [
      { path: 'reason', message: reason },
      ...(purpose ? [{ path: 'purpose', message: purpose }] : []),
    ]);
    this.reason = reason;
  }

  /** The same refusal, saying what the sign-in was for. */
  for(purpose: 'link' | 'test'): SsoSignInError {
    return new SsoSignInError(this.reason, this.message, purpose);
  }
}

/** The issuer could not be reached or gave no usable discovery document. */
export class IssuerUnreachableError extends UserError {
  constructor(detail: string) {
    super('issuer_unreachable', `The identity provider could not be reached: ${detail}`, [
      { path: 'issuer', message: detail },
    ]);
  }
}
