// One validation step for every input, GraphQL or REST: a zod schema per input, problems reported per field.
import { z } from 'zod';
import { ValidationError } from '../errors/index.ts';
import { Role } from '../../prisma/generated/client/enums.ts';

export function parseInput<S extends z.ZodType>(
  schema: S,
  input: unknown,
  message = 'The request is invalid',
): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => ({
    path: issue.path.map(String).join('.') || '(body)',
    message: issue.message,
  }));
  throw new ValidationError(message, details);
}

// ---- timestamps ---------------------------------------------------------------------------------------------

/** What a refused timestamp is told, wherever it came in (REST, GraphQL variable or literal, query string). */
export const TIMESTAMP_RULE = 'must be an RFC 3339 date-time with a zone, e.g. 2027-06-30T00:00:00Z';
export const TIMESTAMP_OR_DAY_RULE =
  'must be an RFC 3339 date-time with a zone (2027-06-30T00:00:00Z) or a date (2027-06-30)';

// RFC 3339 5.6 date-time, 'T' and 'Z' in either case (its note to 5.6). Fractions past nanoseconds are refused
// rather than read; a Date keeps milliseconds, the rest is dropped.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
const FULL_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

// RFC 3339 spells years 0000-9999, but PostgreSQL has no year 0 (it counts 1 BC) and refuses '0000-...'; an offset
// can also carry 9999-12-31 past year 9999. Only instants in years 1-9999 UTC are read, so every one can be stored.
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const AFTER_LAST_INSTANT = Date.parse('+010000-01-01T00:00:00Z');
const storable = (date: Date) =>
  date.getTime() >= FIRST_INSTANT && date.getTime() < AFTER_LAST_INSTANT ? date : undefined;

/**
 * The instant these wall-clock components name in UTC, or undefined when they name none: Date rolls 30 February
 * over to 2 March and 24:00 to the next day, so the components must come back unchanged (month 13, day 0,
 * 29 February of a common year, hour 24, minute or second 60 do not). A leap second (:60) cannot be held by a
 * Date and is refused too. setUTCFullYear, unlike Date.UTC, does not read years 0-99 as 1900-1999.
 */
function utcInstant(
  year: number,
  month: number,
  day: number,
  hour = 0,
  minute = 0,
  second = 0,
  ms = 0,
): Date | undefined {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  const same =
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute &&
    date.getUTCSeconds() === second;
  return same ? date : undefined;
}

/** A strict RFC 3339 date-time as its instant; undefined for anything else (no zone, a space for T, 2027-02-30...). */
export function parseTimestamp(text: string): Date | undefined {
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, fraction = '', , sign, oh, om] = m;
  const local = utcInstant(
    Number(y),
    Number(mo),
    Number(d),
    Number(h),
    Number(mi),
    Number(s),
    Number(fraction.slice(0, 3).padEnd(3, '0')),
  );
  if (!local) return undefined;
  if (!sign) return storable(local);
  // time-numoffset: hours 00-23, minutes 00-59; -00:00 is UTC with the local offset unknown (RFC 3339 4.3).
  if (Number(oh) > 23 || Number(om) > 59) return undefined;
  const offsetMs = (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000;
  return storable(new Date(local.getTime() - offsetMs));
}

/** A strict RFC 3339 full-date (YYYY-MM-DD) as midnight UTC; undefined for anything else (2027-02-29...). */
export function parseDay(text: string): Date | undefined {
  const m = FULL_DATE.exec(text);
  const day = m ? utcInstant(Number(m[1]), Number(m[2]), Number(m[3])) : undefined;
  return day && storable(day);
}

const timestamp = z.string({ message: TIMESTAMP_RULE }).transform((v, ctx) => {
  const date = parseTimestamp(v);
  if (!date) ctx.addIssue({ code: 'custom', message: TIMESTAMP_RULE });
  return date ?? z.NEVER;
});

/** Shared field rules, so that an e-mail or a name means the same thing everywhere. */
export const fields = {
  email: z
    .string()
    .trim()
    .max(254)
    .pipe(z.email('must be an e-mail address'))
    .transform((v) => v.toLowerCase()),
  password: z.string().min(12, 'must be at least 12 characters').max(256, 'must be at most 256 characters'),
  name: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  httpsUrl: z.url({ protocol: /^https$/, message: 'must be an https URL' }).max(2048),
  id: z.string().min(1).max(100),
  role: z.enum(Role, { message: 'must be owner, admin or member' }),
  /** Every timestamp the API accepts, the DateTime scalar's included: strict RFC 3339, as a Date. */
  timestamp,
  /** A timestamp, or a whole day (UTC) where the interface takes one: `dateOnly` says which was given. */
  timestampOrDay: z.string({ message: TIMESTAMP_OR_DAY_RULE }).transform((v, ctx) => {
    const day = parseDay(v);
    const date = day ?? parseTimestamp(v);
    if (!date) ctx.addIssue({ code: 'custom', message: TIMESTAMP_OR_DAY_RULE });
    return date ? { date, dateOnly: day !== undefined } : z.NEVER;
  }),
};

/** GraphQL gives absent input fields as undefined and explicit nulls as null; services decide what null means. */
export const present = (input: object) => Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
