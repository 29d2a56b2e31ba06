import { error, redirect } from '@sveltejs/kit';
import { requireFactorIfRequired } from '#lib/server/gates.ts';
import { loginUrl } from '#lib/server/session.ts';
import type { LayoutServerLoad } from './$types.js';

/** Gate for /portal/*: a session with a current organization, and the second factor it requires. */
export const load: LayoutServerLoad = ({ locals, url }) => {
	if (!locals.user) redirect(303, loginUrl(url));
	if (!locals.organization || !locals.role) error(403, 'You are not a member of any organization.');
	requireFactorIfRequired({ locals, url });
	return { user: locals.user, organization: locals.organization, role: locals.role };
};
