// Ids and secrets draw their random bytes from a batch (schema/lib/crypto.ts): no byte may be handed out twice,
// across batch boundaries too, and ids and secrets made from the batch are well-formed and distinct.
import { describe, expect, it } from 'vitest';
import { freshRandomBytes, randomToken } from '../../../schema/lib/crypto.ts';
import { uuidv7 } from '../../../schema/lib/ids.ts';

describe('random bytes from a batch', () => {
  it('never hands out a byte twice, across many batches and odd sizes', () => {
    const seen = new Set<string>();
    let windows = 0;
    // 3,000 draws of 7 to 33 bytes span some 13 batches of 4,096 and straddle their ends. Every 6-byte window of
    // every draw is new: a range handed out twice shares its windows (two repeat by chance in about one run in
    // 300,000).
    for (let i = 0; i < 3000; i++) {
      const bytes = freshRandomBytes(7 + (i % 27));
      windows += bytes.length - 5;
      for (let at = 0; at + 6 <= bytes.length; at++) {
        const window = bytes.subarray(at, at + 6).toString('hex');
        expect(seen.has(window)).toBe(false);
        seen.add(window);
      }
    }
    expect(seen.size).toBe(windows);
  });

  it('makes version 7 ids and secrets from it, all distinct', () => {
    const ids = new Set(Array.from({ length: 5000 }, () => uuidv7()));
    expect(ids.size).toBe(5000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const tokens = new Set(Array.from({ length: 5000 }, () => randomToken('tst_')));
    expect(tokens.size).toBe(5000);
    for (const token of tokens) expect(token).toMatch(/^tst_[A-Za-z0-9_-]{43}$/);
  });
});
