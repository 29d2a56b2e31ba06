// Dates as the pages show them, in a fixed time zone, so that the server's HTML and the browser's hydration agree.
const DAY = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeZone: 'UTC' });
const MOMENT = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

/** The date of an ISO instant ("3 Nov 2026"). */
export const day = (iso: string) => DAY.format(new Date(iso));

/** The date and minute of an ISO instant, saying it is UTC ("3 Nov 2026, 14:05 UTC"). */
export const when = (iso: string) => `${MOMENT.format(new Date(iso))} UTC`;
