// Step 6: state and nonce are bounded. nonce is optional in the code flow (OIDC Core 3.1.2.1): when
// sent, the ID token carries it back.
import { InvalidRequest } from '../oauth.errors.ts';

export function checkStateAndNonce(p: Record<string, string>): { state: string | null; nonce: string | null } {
  const nonce = p.nonce ?? null;
  if (nonce !== null && nonce.length > 512) throw new InvalidRequest('nonce is too long');
  if (p.state && p.state.length > 2048) throw new InvalidRequest('state is too long');
  return { state: p.state ?? null, nonce: nonce || null };
}
