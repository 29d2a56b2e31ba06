// Wrappers around node:crypto and argon2 so that every secret in Tessera is made and checked one way.
import { createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { hash, verify, type Algorithm } from '@node-rs/argon2';

// Random bytes are drawn from a batch, as Node's randomUUID does: each randomBytes call enters OpenSSL (4-6 µs
// here), and an authorize or a token request makes four or five ids and secrets. Each byte is handed out once.
const BATCH = 4096;
let batch = Buffer.alloc(0);
let taken = 0;

/** `n` (at most BATCH) fresh random bytes from the CSPRNG, never handed out before; the caller may overwrite them. */
export function freshRandomBytes(n: number): Buffer {
  if (taken + n > batch.length) {
    batch = randomBytes(BATCH);
    taken = 0;
  }
  taken += n;
  return batch.subarray(taken - n, taken);
}

/** A 256-bit random secret, base64url, with a prefix that says what it is (tss_ session, tsk_ API key...). */
export function randomToken(prefix: string, bytes = 32): string {
  return `${prefix}${freshRandomBytes(bytes).toString('base64url')}`;
}

/** Random secrets are high-entropy, so a plain SHA-256 is the right storage hash (no slow KDF needed). */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/**
 * A 256-bit key for one purpose, derived from SECRET_KEY by HKDF-SHA256 (RFC 5869) with the purpose as its info: a
 * key that signs one kind of token never signs or decrypts another. Derived once per secret and purpose.
 */
const derived = new WeakMap<Uint8Array, Map<string, Uint8Array>>();
export function derivedKey(secretKey: Uint8Array, purpose: string): Uint8Array {
  let keys = derived.get(secretKey);
  if (!keys) derived.set(secretKey, (keys = new Map<string, Uint8Array>()));
  let key = keys.get(purpose);
  if (!key)
    keys.set(
      purpose,
      (key = new Uint8Array(hkdfSync('sha256', secretKey, new Uint8Array(0), `tessera ${purpose}`, 32))),
    );
  return key;
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

// Argon2id (2 in the binding's const enum) with OWASP's recommended cost.
const ARGON2 = { algorithm: 2 as Algorithm, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const hashPassword = (password: string) => hash(password, ARGON2);

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

// Verified against when the account does not exist, so that unknown e-mails take as long as wrong passwords.
let decoy: Promise<string> | undefined;
export async function burnPasswordCheck(password: string): Promise<void> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'));
  await verifyPassword(await decoy, password);
}

// The password of accounts made by an identity provider or a directory: a hash of random bytes nobody knows, made
// once per process. A sign-in with any password then costs what a wrong one costs, and says nothing.
let unusable: Promise<string> | undefined;
export function unusablePasswordHash(): Promise<string> {
  unusable ??= hashPassword(randomBytes(32).toString('hex'));
  return unusable;
}
