import type { Cookies, RequestEvent } from '@sveltejs/kit';
import { sessionCookieAttributes } from '../../../../server/portal-contract.ts';
import { bridge } from './graphql.ts';

/** Where a signed-in user lands when there is no (acceptable) return_to. */
export const HOME = '/portal/dashboard';

type CookieEvent = Pick<RequestEvent, 'platform'> & { cookies: Cookies };

export function setSessionCookie(event: CookieEvent, token: string, expiresAt: string): void {
	const cookie = bridge(event).cookie;
	event.cookies.set(cookie.name, token, sessionCookieAttributes(cookie, new Date(expiresAt)));
}

export function clearSessionCookie(event: CookieEvent): void {
	const cookie = bridge(event).cookie;
	event.cookies.delete(cookie.name, sessionCookieAttributes(cookie));
}

/**
 * The path to send the user to after sign-in: `returnTo` resolved by the URL parser against our `origin`, when
 * it stays on that origin, else HOME. The answer is checked to resolve to the same place again, so that nothing
 * the parser normalises into another host ('/.//evil.example' has the path '//evil.example', which a browser
 * reads as a host) can leave the site; and it never points back at the sign-in pages, which would loop.
 */
export function safeReturnTo(returnTo: string | null | undefined, origin: string): string {
	if (!returnTo) return HOME;
	let url: URL;
	try {
		url = new URL(returnTo, origin);
	} catch {
		return HOME;
	}
	if (url.origin !== origin) return HOME;
	if (url.pathname === '/login' || url.pathname === '/logout') return HOME;
	const path = url.pathname + url.search + url.hash;
	if (!path.startsWith('/') || path.startsWith('//') || new URL(path, origin).href !== url.href) return HOME;
	return path;
}

/** The sign-in page, asking to come back to `url` afterwards. */
export function loginUrl(url: URL): string {
	return `/login?${new URLSearchParams({ return_to: url.pathname + url.search })}`;
}
