import type { Cookies, RequestEvent } from '@sveltejs/kit';
import { DEVICE_COOKIE, deviceCookieAttributes, sessionCookieAttributes } from '../../../../server/portal-contract.ts';
import { bridge, gql, graphql, sessionToken, type ResultOf, type Role } from './graphql.ts';

/** Where a signed-in user lands when there is no (acceptable) return_to. */
export const HOME = '/portal/dashboard';

/** Where owners and admins land instead: the admin dashboard of the organization they act in. */
export const ADMIN_HOME = '/admin/dashboard';

/** HOME for a member (or no organization), ADMIN_HOME for an owner or admin. */
export const homeOf = (role: Role | null | undefined) => (role === 'owner' || role === 'admin' ? ADMIN_HOME : HOME);

type CookieEvent = Pick<RequestEvent, 'platform'> & { cookies: Cookies };

export function setSessionCookie(event: CookieEvent, token: string, expiresAt: string): void {
	const cookie = bridge(event).cookie;
	event.cookies.set(cookie.name, token, sessionCookieAttributes(cookie, new Date(expiresAt)));
}

/** What the portal keeps of a sign-in's LoginPayload: the session, where it starts, and the device cookie. */
export const LOGIN_PAYLOAD_FIELDS = graphql(`
	fragment LoginPayloadFields on LoginPayload {
		token
		expiresAt
		mfaEnrollmentRequired
		organization {
			id
			role
		}
		deviceCookie {
			value
			expiresAt
		}
	}
`);

export type LoginPayload = ResultOf<typeof LOGIN_PAYLOAD_FIELDS>;

/**
 * The device cookie of the account just signed in to: while this browser's address is locked by wrong passwords for
 * many accounts, it still signs in to that account (docs/architecture.md#identity-sessions-and-tokens). Never cleared
 * at sign-out: it says the browser signed in before, not that it is signed in.
 */
export function setDeviceCookie(event: CookieEvent, device: LoginPayload['deviceCookie']): void {
	event.cookies.set(
		DEVICE_COOKIE,
		device.value,
		deviceCookieAttributes(bridge(event).cookie, new Date(device.expiresAt)),
	);
}

const LOGOUT = graphql(`
	mutation Logout {
		logout
	}
`);

/** Ends the session the request's cookie carries, at the service; clearing the cookie is the caller's step. */
export async function endSession(event: CookieEvent): Promise<void> {
	await gql(event, LOGOUT);
}

/**
 * A sign-in done (a password's, a second factor's, a passkey's): the session cookie, replacing the one of a session
 * signed in again, which ends; and the device cookie.
 */
export async function startSession(event: CookieEvent, payload: LoginPayload): Promise<void> {
	// Ending the old session is a courtesy: the sign-in stands even when it fails.
	if (sessionToken(event)) await endSession(event).catch(() => undefined);
	setSessionCookie(event, payload.token, payload.expiresAt);
	setDeviceCookie(event, payload.deviceCookie);
}

export function clearSessionCookie(event: CookieEvent): void {
	const cookie = bridge(event).cookie;
	event.cookies.delete(cookie.name, sessionCookieAttributes(cookie));
}

/**
 * The path to send the user to after sign-in: `returnTo` resolved by the URL parser against our `origin`, when
 * it stays on that origin, else `home` (HOME unless given, see homeOf). The answer is checked to resolve to the same place again, so that nothing
 * the parser normalises into another host ('/.//evil.example' has the path '//evil.example', which a browser
 * reads as a host) can leave the site; and it never points back at the sign-in pages, which would loop.
 */
export function safeReturnTo(returnTo: string | null | undefined, origin: string, home: string = HOME): string {
	if (!returnTo) return home;
	let url: URL;
	try {
		url = new URL(returnTo, origin);
	} catch {
		return home;
	}
	if (url.origin !== origin) return home;
	if (url.pathname === '/login' || url.pathname === '/logout') return home;
	const path = url.pathname + url.search + url.hash;
	if (!path.startsWith('/') || path.startsWith('//') || new URL(path, origin).href !== url.href) return home;
	return path;
}

/** The sign-in page, asking to come back to `url` afterwards. */
export function loginUrl(url: URL): string {
	return `/login?${new URLSearchParams({ return_to: url.pathname + url.search })}`;
}
