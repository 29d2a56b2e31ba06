import type { LayoutServerLoad } from './$types.js';

export const load: LayoutServerLoad = ({ locals }) => ({
	user: locals.user,
	organizations: locals.organizations,
	currentOrganizationId: locals.organization?.id ?? null,
});
