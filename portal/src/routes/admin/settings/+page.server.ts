import { redirect } from '@sveltejs/kit';
import type { PageServerLoad } from './$types.js';

/** The settings have no page of their own: the first of them stands in. */
export const load: PageServerLoad = async ({ parent }) => {
	await parent();
	redirect(307, '/admin/settings/members');
};
