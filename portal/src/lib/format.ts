// Dates as the pages show them, in a fixed time zone, so that the server's HTML and the browser's hydration agree.
const DAY = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeZone: 'UTC' });
const MOMENT = {
	minute: new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }),
	// Where moments seconds apart must read apart (a delivery's attempts).
	second: new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'medium', timeZone: 'UTC' }),
};

/** The date of an ISO instant ("3 Nov 2026"). */
export const day = (iso: string) => DAY.format(new Date(iso));

/** The date and minute (or second) of an ISO instant, saying it is UTC ("3 Nov 2026, 14:05 UTC"). */
export const when = (iso: string, to: keyof typeof MOMENT = 'minute') => `${MOMENT[to].format(new Date(iso))} UTC`;
