// Secrets kept encrypted at rest under SECRET_KEY (docs/architecture.md#identity-sessions-and-tokens): a compact JWE,
// dir + A256GCM, the one format of every encrypted column (webhook and app signing secrets, TOTP secrets, SSO
// connections' client secrets, the private halves of signing keys). The format is what the rows hold: changing it
// would leave every stored value unreadable (test/schema/lib/sealed.test.ts opens values sealed before this file).
import { CompactEncrypt, compactDecrypt } from 'jose';

/** `text` encrypted under `secretKey`, as it is stored. */
export async function seal(text: string, secretKey: Uint8Array): Promise<string> {
  return new CompactEncrypt(new TextEncoder().encode(text))
    .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: 'secret-key' })
    .encrypt(secretKey);
}

/** The text `seal` stored; rejects with jose's ERR_JWE_DECRYPTION_FAILED under any other key. */
export async function unseal(sealed: string, secretKey: Uint8Array): Promise<string> {
  return new TextDecoder().decode((await compactDecrypt(sealed, secretKey)).plaintext);
}
