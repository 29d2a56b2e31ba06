// Step 9: an id_token_hint is verified, not just read: an ID token of ours, issued to this client. Its subject
// then decides whether the signed-in user is the one the client expects (require-login).
import type { Context } from '../../../context.ts';
import { verifyIdTokenHint } from '../id-token-hint.ts';

export async function checkIdTokenHint(ctx: Context, hint: string | null, clientId: string): Promise<string | null> {
  if (hint === null) return null;
  return (await verifyIdTokenHint(ctx, hint, clientId)).subject;
}
