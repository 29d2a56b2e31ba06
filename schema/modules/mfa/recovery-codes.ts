// Recovery codes: ten per set, each 80 random bits written as four groups of four base32 letters, stored as
// SHA-256 (80 bits are out of reach of a guess, so no slow hash is needed) and used once.
import { Prisma } from '../../db.ts';
import { freshRandomBytes, sha256 } from '../../lib/crypto.ts';
import { uuidv7 } from '../../lib/ids.ts';

export const RECOVERY_CODES_PER_SET = 10;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

function newCode(): string {
  const bytes = freshRandomBytes(10);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out.replace(/.{4}(?=.)/g, '$&-');
}

/** What a person typed, as stored: case, spaces and hyphens do not matter. */
export const recoveryCodeHash = (typed: string) => sha256(typed.toLowerCase().replace(/[\s-]/g, ''));

/** A new set for `userId`, replacing the old one: the codes to show once, and the statement that stores them. */
export function newRecoveryCodes(
  userId: string,
  now: Date,
): { codes: string[]; replace: (tx: Prisma.TransactionClient) => Promise<void> } {
  const codes = Array.from({ length: RECOVERY_CODES_PER_SET }, newCode);
  const rows = codes.map((code) => Prisma.sql`(${uuidv7()}, ${userId}, ${recoveryCodeHash(code)}, ${now}::timestamp)`);
  return {
    codes,
    replace: async (tx) => {
      await tx.$executeRaw`
        with removed as (delete from recovery_codes where user_id = ${userId})
        insert into recovery_codes (id, user_id, code_hash, created_at) values ${Prisma.join(rows)}`;
    },
  };
}

/** Uses a code: of any number of concurrent uses, exactly one gets true. */
export async function useRecoveryCode(
  tx: Pick<Prisma.TransactionClient, '$executeRaw'>,
  userId: string,
  typed: string,
  now: Date,
): Promise<boolean> {
  const used = await tx.$executeRaw`
    update recovery_codes set used_at = ${now}::timestamp
    where user_id = ${userId} and code_hash = ${recoveryCodeHash(typed)} and used_at is null`;
  return used === 1;
}
