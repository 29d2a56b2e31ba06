// UUIDv7 ids (RFC 9562): the ids one process makes sort in the order it made them, even many in one millisecond.
import { describe, expect, it } from 'vitest';
import { uuidv7 } from '../../../schema/lib/ids.ts';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const timeOf = (id: string) => parseInt(id.replaceAll('-', '').slice(0, 12), 16);

describe('uuidv7', () => {
  it('makes ids that sort in the order they were made, thousands within a millisecond', () => {
    const ids = Array.from({ length: 20_000 }, () => uuidv7());
    for (const id of ids) expect(id).toMatch(UUID_V7);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    // and their times never go back (a worker shared with tests that fake the clock may have moved it on)
    expect(timeOf(ids.at(-1)!)).toBeGreaterThanOrEqual(timeOf(ids[0]!));
  });

  it('takes a given time, and given bits, as they are', () => {
    const at = Date.UTC(2027, 0, 1);
    expect(timeOf(uuidv7(at))).toBe(at);
    const bits = Buffer.alloc(16, 0xab);
    expect(uuidv7(at, Buffer.from(bits))).toBe(uuidv7(at, Buffer.from(bits)));
    expect(uuidv7(at, Buffer.from(bits))).toMatch(UUID_V7);
  });
});
