import { error, redirect } from '@sveltejs/kit';
import { errorPage, userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf, type Role } from '#lib/server/graphql.ts';
import { HOME, loginUrl, safeReturnTo } from '#lib/server/session.ts';
import type { Actions, PageServerLoad } from './$types.js';
import { formText } from '#lib/form.ts';

const SWITCH_ORGANIZATION = graphql(
	`
		mutation SwitchOrganization($organizationId: String!) {
			switchOrganization(organizationId: $organizationId) {
				__typename
				... on Viewer {
					organization {
						id
						role
					}
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/** Only the header's form posts here; an address typed in goes home. */
export const load: PageServerLoad = () => redirect(303, HOME);

/**
 * Where to land in the organization switched to: the page the person was on, on Tessera's origin only
 * (safeReturnTo). A record's page is the other organization's list of such records instead (its ids mean nothing
 * there), a list starts on its first page, and the admin pages are for owners and admins only.
 */
function landing(returnTo: string | null, origin: string, role: Role | null): string {
	const path = new URL(safeReturnTo(returnTo, origin), origin).pathname;
	const [area, section, sub] = path.split('/').slice(1);
	if (area === 'admin' && role !== 'owner' && role !== 'admin') return HOME;
	// The platform's pages (every organization) are the same in any organization.
	if (area === 'admin' && section === 'organizations') return path;
	if (area === 'admin' || area === 'portal')
		return ['', area, section, section === 'settings' ? sub : undefined].filter((s) => s !== undefined).join('/');
	return path;
}

export const actions: Actions = {
	default: async (event) => {
		if (!event.locals.user) redirect(303, loginUrl(event.url));
		const form = await event.request.formData();
		const organizationId = formText(form, 'organizationId');
		if (!organizationId) error(400, 'Choose an organization to switch to.');
		let result: ResultOf<typeof SWITCH_ORGANIZATION>['switchOrganization'];
		try {
			({ switchOrganization: result } = await gql(event, SWITCH_ORGANIZATION, { organizationId }));
		} catch (err) {
			errorPage(err, { not_found: 'You are not a member of that organization.' });
		}
		if (result?.__typename === 'UserError') error(userErrorStatus(result), result.message);
		const returnTo = form.get('return_to');
		redirect(
			303,
			landing(typeof returnTo === 'string' ? returnTo : null, event.url.origin, result?.organization?.role ?? null),
		);
	},
};
