import type { HandleClientError } from '@sveltejs/kit/hooks';

// A page whose scripts could not be fetched (a connection dropped, or a deploy replaced them) would stay on Kit's
// error page, its server-rendered form gone: load it once more instead. At most once a minute per address, so a
// failure that lasts still shows the error page.
const RELOADED = 'tessera:reloaded:';
const RETRY_AFTER_MS = 60_000;

/** Chromium's, WebKit's and Firefox's words for a module that could not be fetched. */
const FAILED_IMPORT = /dynamically imported module|Importing a module script failed/;

export const handleError: HandleClientError = ({ error }) => {
	if (!(error instanceof TypeError) || !FAILED_IMPORT.test(error.message)) return;
	try {
		const key = RELOADED + location.pathname + location.search;
		if (Date.now() - Number(sessionStorage.getItem(key) ?? 0) < RETRY_AFTER_MS) return;
		sessionStorage.setItem(key, String(Date.now()));
	} catch {
		return; // no session storage: no way to tell a first failure from a lasting one
	}
	location.reload();
};
