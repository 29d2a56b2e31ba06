import { gql, graphql } from '#lib/server/graphql.ts';
import type { PageServerLoad } from './$types.js';

const INSTALLATIONS = graphql(`
	query InstalledApps($org: String!) {
		installations(organizationId: $org, limit: 100) {
			items {
				id
				launchUrl
				installedAt
				app {
					name
					description
					homepageUrl
				}
			}
		}
	}
`);

/** The apps installed in the current organization, each opened through its single sign-on launch URL. */
export const load: PageServerLoad = async (event) => {
	const { organization } = await event.parent();
	const { installations } = await gql(event, INSTALLATIONS, { org: organization.id });
	return { installations: installations.items };
};
