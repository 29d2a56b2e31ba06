// Step 7: a PKCE challenge, when given, is well formed (RFC 7636 4.2, 4.3); plain is the default method.
import { createHash } from 'node:crypto';
import { InvalidRequest } from '../oauth.errors.ts';

const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;

type Pkce = { codeChallenge: string | null; codeChallengeMethod: 'S256' | 'plain' | null };

export function checkPkce(p: Record<string, string>): Pkce {
  if (p.code_challenge === undefined) {
    if (p.code_challenge_method !== undefined)
      throw new InvalidRequest('code_challenge_method was given without code_challenge');
    return { codeChallenge: null, codeChallengeMethod: null };
  }
  if (!PKCE_VALUE.test(p.code_challenge))
    throw new InvalidRequest('code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]');
  const method = p.code_challenge_method ?? 'plain';
  if (method !== 'S256' && method !== 'plain') throw new InvalidRequest('code_challenge_method must be S256 or plain');
  return { codeChallenge: p.code_challenge, codeChallengeMethod: method };
}

/** PKCE at the token endpoint (RFC 7636 4.6). */
export function pkceMatches(method: string | null, challenge: string, verifier: string): boolean {
  if (!PKCE_VALUE.test(verifier)) return false;
  const computed = method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
  return computed === challenge;
}
