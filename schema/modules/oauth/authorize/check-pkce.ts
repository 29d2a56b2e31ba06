// Step 7: a PKCE challenge, when given, is well formed (RFC 7636 4.2, 4.3); plain is the default method. A public
// client must send one, with S256 (docs/architecture.md#apps-without-secrets): its code is all an attacker who
// intercepts the redirect would need, and plain would hand them the verifier with it.
import { createHash } from 'node:crypto';
import { InvalidRequest } from '../oauth.errors.ts';
import type { AuthorizeClient } from './request.ts';

const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;

type Pkce = { codeChallenge: string | null; codeChallengeMethod: 'S256' | 'plain' | null };

export function checkPkce(client: Pick<AuthorizeClient, 'tokenEndpointAuthMethod'>, p: Record<string, string>): Pkce {
  const publicClient = client.tokenEndpointAuthMethod === 'none';
  if (p.code_challenge === undefined) {
    if (p.code_challenge_method !== undefined)
      throw new InvalidRequest('code_challenge_method was given without code_challenge');
    if (publicClient) throw new InvalidRequest('A public client must send code_challenge, with S256');
    return { codeChallenge: null, codeChallengeMethod: null };
  }
  if (!PKCE_VALUE.test(p.code_challenge))
    throw new InvalidRequest('code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]');
  const method = p.code_challenge_method ?? 'plain';
  if (method !== 'S256' && method !== 'plain') throw new InvalidRequest('code_challenge_method must be S256 or plain');
  if (publicClient && method !== 'S256')
    throw new InvalidRequest('A public client must use code_challenge_method S256');
  return { codeChallenge: p.code_challenge, codeChallengeMethod: method };
}

/** PKCE at the token endpoint (RFC 7636 4.6). */
export function pkceMatches(method: string | null, challenge: string, verifier: string): boolean {
  if (!PKCE_VALUE.test(verifier)) return false;
  const computed = method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
  return computed === challenge;
}
