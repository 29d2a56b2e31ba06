import { gql } from '#lib/server/graphql.ts';
import type { PageServerLoad } from './$types.js';

interface Installation {
	id: string;
	launchUrl: string;
	installedAt: string;
	app: { name: string; description: string; homepageUrl: string | null };
}

const QUERY = `query($org: String!) { installations(organizationId: $org, limit: 100) { items { id launchUrl installedAt app { name description homepageUrl } } } }`;

/** The apps installed in the current organization, each opened through its single sign-on launch URL. */
export const load: PageServerLoad = async (event) => {
	const { organization } = await event.parent();
	const data = await gql<{ installations: { items: Installation[] } }>(event, QUERY, { org: organization.id });
	return { installations: data.installations.items };
};
