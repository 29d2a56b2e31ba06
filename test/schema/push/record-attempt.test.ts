// An attempt is counted whatever the receiver answered: when its record cannot be written, it is written again
// without the reply, so the five-attempt limit and the failing mark hold (a reply PostgreSQL refused once kept a
// delivery pending and resent it forever). A database that is down is not such a case: that error goes up.
import { describe, expect, it } from 'vitest';
import { recordAttempt, type Attempted } from '../../../schema/push/signed-attempt.ts';

const attempt: Attempted = {
  attempt: 2,
  startedAt: new Date(),
  headers: {},
  success: false,
  next: new Date(),
  status: 'pending',
  now: new Date(),
  result: { statusCode: 500, headers: { 'x-odd': 'v' }, body: 'reply', error: null, durationMs: 12 },
};

describe('recordAttempt', () => {
  it('writes the attempt once when the record fits', async () => {
    const written: Attempted[] = [];
    await recordAttempt(attempt, async (a) => void written.push(a));
    expect(written).toEqual([attempt]);
  });

  it('writes it again without the reply when the record is refused, keeping its status and schedule', async () => {
    const written: Attempted[] = [];
    await recordAttempt(attempt, async (a) => {
      written.push(a);
      if (written.length === 1)
        throw Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' });
    });
    expect(written).toHaveLength(2);
    expect(written[1]).toMatchObject({
      attempt: 2,
      status: 'pending',
      next: attempt.next,
      result: { statusCode: 500, headers: null, body: null, durationMs: 12 },
    });
    expect(written[1]!.result.error).toMatch(/could not be recorded/);
  });

  it('lets a database outage through, to be retried as a whole', async () => {
    const outage = Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' });
    let calls = 0;
    await expect(
      recordAttempt(attempt, async () => {
        calls++;
        throw outage;
      }),
    ).rejects.toBe(outage);
    expect(calls).toBe(1);
  });
});
