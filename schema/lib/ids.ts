// Identifiers for rows written with raw SQL, the same kind Prisma's @default(uuid(7)) makes: UUIDv7 (RFC 9562),
// time-ordered, so paging by id stays newest-first.
import { freshRandomBytes } from './crypto.ts';

/** `bytes` (16, overwritten) supplies the non-time bits: random by default, a hash for an id that must repeat. */
export function uuidv7(now = Date.now(), bytes: Buffer = freshRandomBytes(16)): string {
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
