// Identifiers for rows written with raw SQL, the same kind Prisma's @default(uuid(7)) makes: UUIDv7 (RFC 9562),
// time-ordered, so paging by id stays newest-first.
import { freshRandomBytes } from './crypto.ts';

// RFC 9562 6.2, method 1: the 12 bits after the version are a counter within a millisecond, so the ids one process
// makes in order sort in that order (an operation's events list in the order it emitted them, even across calls
// made in the same millisecond). The counter starts at a random value below 2048 each millisecond, leaving room
// to count; past 4095 the id borrows the next millisecond.
let lastMs = 0;
let counter = 0;

function nextTick(now: number): { ms: number; seq: number } {
  if (now > lastMs) {
    lastMs = now;
    counter = freshRandomBytes(2).readUInt16BE(0) & 0x7ff;
  } else if (++counter > 0xfff) {
    lastMs += 1;
    counter = 0;
  }
  return { ms: lastMs, seq: counter };
}

/**
 * A new id, in the process's order. Given `now` (a service clock's time), the id takes that time with random bits,
 * outside the order; `bytes` (16, overwritten) supplies the non-time bits of an id that must repeat (a hash).
 */
export function uuidv7(now?: number, bytes?: Buffer): string {
  let ms = now ?? Date.now();
  const buffer = bytes ?? freshRandomBytes(16);
  if (now === undefined && !bytes) {
    const tick = nextTick(ms);
    ms = tick.ms;
    buffer[6] = tick.seq >> 8;
    buffer[7] = tick.seq & 0xff;
  }
  buffer.writeUIntBE(ms, 0, 6);
  buffer[6] = (buffer.readUInt8(6) & 0x0f) | 0x70;
  buffer[8] = (buffer.readUInt8(8) & 0x3f) | 0x80;
  const hex = buffer.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
