// The one rule for timestamps (schema/lib/input.ts): RFC 3339 5.6 date-time with a zone, 'T' and 'Z' in either
// case, and a full-date where the interface takes a day. A spelling that names no instant is refused, never rolled
// over as Date does (30 February to 2 March, 24:00 to the next day, years 0-99 to 1900-1999).
import { describe, expect, it } from 'vitest';
import { fields, parseDay, parseTimestamp } from '../../../schema/lib/input.ts';

describe('parseTimestamp', () => {
  it.each([
    ['2027-06-30T00:00:00Z', '2027-06-30T00:00:00.000Z'],
    ['2027-06-30t00:00:00z', '2027-06-30T00:00:00.000Z'],
    ['2027-06-30T02:00:00+02:00', '2027-06-30T00:00:00.000Z'],
    ['2027-06-29T19:30:00-04:30', '2027-06-30T00:00:00.000Z'],
    ['2027-06-30T00:00:00-00:00', '2027-06-30T00:00:00.000Z'],
    ['2027-06-30T00:00:00.5Z', '2027-06-30T00:00:00.500Z'],
    ['2027-06-30T00:00:00.123456789Z', '2027-06-30T00:00:00.123Z'],
    ['2028-02-29T23:59:59.999Z', '2028-02-29T23:59:59.999Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    ['0099-12-31T23:59:59Z', '0099-12-31T23:59:59.000Z'],
    ['9999-12-31T23:59:59+23:59', '9999-12-31T00:00:59.000Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['0000-12-31T23:00:00-01:00', '0001-01-01T00:00:00.000Z'],
  ])('reads %s as %s', (text, instant) => {
    expect(parseTimestamp(text)?.toISOString()).toBe(instant);
  });

  it.each([
    '2027-02-30T00:00:00Z',
    'Tue, 01 Jan 2030 00:00:00 GMT',
    '2030',
    '2027-13-01T00:00:00Z',
    '2027-00-10T00:00:00Z',
    '2027-06-00T00:00:00Z',
    '2027-02-29T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '2027-04-31T00:00:00Z',
    '2027-06-30T24:00:00Z',
    '2027-06-30T12:60:00Z',
    '2027-06-30T23:59:60Z',
    '2027-06-30T12:00:61Z',
    '2027-06-30T00:00:00',
    '2027-06-30 00:00:00Z',
    '2027-06-30',
    '2027-06-30T00:00Z',
    '2027-06-30T00:00:00+0200',
    '2027-06-30T00:00:00+02',
    '2027-06-30T00:00:00+24:00',
    '2027-06-30T00:00:00+02:60',
    '2027-06-30T00:00:00.Z',
    '2027-06-30T00:00:00.1234567890Z',
    '2027-06-30T00:00:00,5Z',
    '2027-06-30T00:00:00Zjunk',
    '2027-06-30T00:00:00Z\n',
    ' 2027-06-30T00:00:00Z',
    '2027-06-30T00:00:00Z\u0000',
    '+002027-06-30T00:00:00Z',
    // PostgreSQL holds no year 0 and no year 10000: an instant it could not store is not read.
    '0000-06-30T00:00:00Z',
    '0001-01-01T00:00:00+00:01',
    '9999-12-31T23:59:59-00:01',
    '27-06-30T00:00:00Z',
    '２０２７-06-30T00:00:00Z',
    '',
  ])('refuses %j', (text) => {
    expect(parseTimestamp(text)).toBeUndefined();
  });
});

describe('parseDay', () => {
  it('reads a real day as its midnight in UTC and refuses an impossible one', () => {
    expect(parseDay('2028-02-29')?.toISOString()).toBe('2028-02-29T00:00:00.000Z');
    expect(parseDay('0001-01-01')?.toISOString()).toBe('0001-01-01T00:00:00.000Z');
    for (const text of [
      '2027-02-29',
      '2027-02-30',
      '2027-13-01',
      '2027-6-30',
      '2027-06-30T00:00:00Z',
      '20270630',
      '0000-01-01',
    ])
      expect(parseDay(text), text).toBeUndefined();
  });
});

describe('fields.timestamp and fields.timestampOrDay', () => {
  it("give the instant, or one field problem in the rule's words", () => {
    expect(fields.timestamp.parse('2027-06-30T02:00:00+02:00').toISOString()).toBe('2027-06-30T00:00:00.000Z');
    expect(fields.timestamp.safeParse('2027-02-30T00:00:00Z').error?.issues.map((i) => i.message)).toEqual([
      'must be an RFC 3339 date-time with a zone, e.g. 2027-06-30T00:00:00Z',
    ]);
    expect(fields.timestamp.safeParse(2030).success).toBe(false);
    expect(fields.timestampOrDay.parse('2028-02-29')).toEqual({
      date: new Date('2028-02-29T00:00:00Z'),
      dateOnly: true,
    });
    expect(fields.timestampOrDay.parse('2028-02-29T00:00:00Z')).toEqual({
      date: new Date('2028-02-29T00:00:00Z'),
      dateOnly: false,
    });
    expect(fields.timestampOrDay.safeParse('2027-02-29').success).toBe(false);
  });
});
