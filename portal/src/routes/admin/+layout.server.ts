import { error, redirect } from '@sveltejs/kit';
import { loginUrl } from '#lib/server/session.ts';
import type { LayoutServerLoad } from './$types.js';

/** Gate for /admin/*: an owner or admin of the session's current organization. */
export const load: LayoutServerLoad = ({ locals, url }) => {
	if (!locals.user) redirect(303, loginUrl(url));
	if (!locals.organization || (locals.role !== 'owner' && locals.role !== 'admin')) {
		error(403, 'Only owners and admins of the organization can open the admin dashboard.');
	}
	return { organization: locals.organization, role: locals.role };
};
