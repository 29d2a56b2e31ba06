import { redirect } from '@sveltejs/kit';
import { sessionToken } from '#lib/server/graphql.ts';
import { clearSessionCookie, endSession } from '#lib/server/session.ts';
import type { Actions, PageServerLoad } from './$types.js';

export const load: PageServerLoad = ({ locals, url, setHeaders }) => {
	// A sign-out request from an application (/oauth/logout sent the browser here): signed by the service and bound
	// to this session, it is posted back to /oauth/logout only when the user confirms. Opaque to the portal.
	const request = url.searchParams.get('request') || null;
	if (!locals.user && !request) redirect(303, '/login');
	// Never framed (a click tricked through a frame would confirm), never cached (the request is single-session).
	setHeaders({
		'cache-control': 'no-store',
		'x-frame-options': 'DENY',
		'content-security-policy': "frame-ancestors 'none'",
	});
	return { request };
};

export const actions: Actions = {
	default: async (event) => {
		if (sessionToken(event)) await endSession(event);
		clearSessionCookie(event);
		redirect(303, '/login');
	},
};
