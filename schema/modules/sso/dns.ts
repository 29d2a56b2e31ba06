// The DNS lookups that prove a domain (docs/architecture.md#single-sign-on): TXT records through the resolvers of
// DNS_SERVERS, or the system's. What a DNS server answers is written by whoever controls the zone (or the path to
// it), so it is shown to people only through `shownValues`: printable, short and few.
import { Resolver } from 'node:dns/promises';
import type { Settings } from '../../context.ts';

/** A lookup's outcome: the TXT values found (none for a name or type that does not exist), or why none could be read. */
export type TxtAnswer = { values: string[] } | { problem: string };

// Each try waits up to 2 s (maxTimeout caps c-ares' doubling): a server that says nothing costs a request 4 s.
const RESOLVER_OPTIONS = { timeout: 2000, tries: 2, maxTimeout: 2000 };

/** What a failed lookup's code means, for the person whose DNS it is (the codes of node:dns). */
const PROBLEMS: Record<string, string> = {
  ETIMEOUT: 'the DNS server did not answer',
  ECONNREFUSED: 'the DNS server could not be reached',
  ESERVFAIL: 'the DNS server failed to answer',
  EREFUSED: 'the DNS server refused the query',
  EBADRESP: 'the DNS server sent an answer that could not be read',
  EFORMERR: 'the DNS server sent an answer that could not be read',
  EBADNAME: 'the name cannot be looked up',
  ENOTIMP: 'the DNS server does not answer TXT queries',
};

/**
 * The TXT records at `name`, each one's character-strings joined (RFC 7208 3.3 reads a split record that way).
 * No such name (NXDOMAIN) or no TXT record there (NODATA) is an empty list; any other failure is a short reason.
 */
export async function lookupTxt(settings: Pick<Settings, 'dnsServers'>, name: string): Promise<TxtAnswer> {
  const resolver = new Resolver(RESOLVER_OPTIONS);
  if (settings.dnsServers?.length) resolver.setServers(settings.dnsServers);
  try {
    const records = await resolver.resolveTxt(name);
    // node:dns hands each byte over as one character (latin1); the bytes are usually UTF-8.
    return { values: records.map((chunks) => Buffer.from(chunks.join(''), 'latin1').toString('utf8')) };
  } catch (error) {
    const code = String((error as NodeJS.ErrnoException).code ?? '');
    if (code === 'ENOTFOUND' || code === 'ENODATA') return { values: [] };
    const safeCode = /^[A-Z_]{1,20}$/.test(code) ? code : 'unknown error';
    return { problem: `${PROBLEMS[code] ?? 'the DNS lookup failed'} (${safeCode})` };
  }
}

/** How much of a DNS answer a message shows: enough to recognise a mistake, never a page of someone else's text. */
export const SHOWN_VALUES = 10;
export const SHOWN_LENGTH = 100;

// Controls (NUL, escapes, DEL, C1), format characters (bidi overrides, zero-width), line and paragraph separators,
// lone surrogates and private use: they could reorder, hide or break the text they are shown in.
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}]/gu;

/** The code point of a character the pattern matched (a match is never empty). */
function codePoint(c: string): number {
  const point = c.codePointAt(0);
  if (point === undefined) throw new Error('printable: an empty match');
  return point;
}

/** One value, quoted, unprintable characters as \u escapes, cut at SHOWN_LENGTH characters. */
export function printable(value: string): string {
  const chars = [...value];
  const cut = chars.length > SHOWN_LENGTH ? `${chars.slice(0, SHOWN_LENGTH).join('')}…` : value;
  const escaped = cut
    .replace(/["\\]/g, (c) => `\\${c}`)
    .replace(UNPRINTABLE, (c) => `\\u${codePoint(c).toString(16).padStart(4, '0')}`);
  return `"${escaped}"`;
}

/** The values found, as a message shows them: the first SHOWN_VALUES, printable, and how many more there were. */
export function shownValues(values: string[]): string {
  const shown = values.slice(0, SHOWN_VALUES).map(printable).join(', ');
  const more = values.length - SHOWN_VALUES;
  return more > 0 ? `${shown} and ${more} more` : shown;
}
