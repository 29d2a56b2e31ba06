import { requireOrgAdmin } from '#lib/server/gates.ts';
import type { LayoutServerLoad } from './$types.js';

/** Gate for /admin/*: an owner or admin of the session's current organization. */
export const load: LayoutServerLoad = (event) => {
	const { organization, role } = requireOrgAdmin(event, 'open the admin dashboard');
	// Some pages (the mail log) are the platform's, not the organization's: the navigation shows them to its admins.
	return { organization, role, platformAdmin: event.locals.platformAdmin };
};
