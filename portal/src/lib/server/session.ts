import type { Cookies, RequestEvent } from '@sveltejs/kit';
import { bridge } from './graphql.ts';

/** Where a signed-in user lands when there is no (acceptable) return_to. */
export const HOME = '/portal/dashboard';

type CookieEvent = Pick<RequestEvent, 'platform'> & { cookies: Cookies };

export function setSessionCookie(event: CookieEvent, token: string, expiresAt: string): void {
	const { name, secure } = bridge(event).cookie;
	event.cookies.set(name, token, {
		path: '/',
		httpOnly: true,
		sameSite: 'lax',
		secure,
		expires: new Date(expiresAt)
	});
}

export function clearSessionCookie(event: CookieEvent): void {
	const { name, secure } = bridge(event).cookie;
	event.cookies.delete(name, { path: '/', httpOnly: true, sameSite: 'lax', secure });
}

const BASE = 'http://return-to.invalid';

/**
 * The path to send the user to after sign-in: `returnTo` when it is a same-origin relative path
 * (a single leading '/', not '//' or '/\'), else HOME. The value is also parsed, so that anything a
 * browser would resolve to another origin (tabs or newlines are stripped by URL parsers) is refused.
 */
export function safeReturnTo(returnTo: string | null | undefined): string {
	if (!returnTo || !returnTo.startsWith('/') || returnTo.startsWith('//') || returnTo.startsWith('/\\')) {
		return HOME;
	}
	if (/[\u0000-\u001f\u007f]/.test(returnTo)) return HOME;
	let url: URL;
	try {
		url = new URL(returnTo, BASE);
	} catch {
		return HOME;
	}
	if (url.origin !== BASE) return HOME;
	// Coming back to the sign-in pages would loop.
	if (url.pathname === '/login' || url.pathname === '/logout') return HOME;
	return url.pathname + url.search + url.hash;
}

/** The sign-in page, asking to come back to `url` afterwards. */
export function loginUrl(url: URL): string {
	return `/login?${new URLSearchParams({ return_to: url.pathname + url.search })}`;
}
