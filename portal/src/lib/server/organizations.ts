// Renaming an organization: its owners and admins do on /admin/settings, the platform's administrators on
// /admin/organizations, each action with its own gate and words.
import { graphql, USER_ERROR_FIELDS } from './graphql.ts';

export const RENAME_ORGANIZATION = graphql(
	`
		mutation RenameOrganization($id: ID!, $name: String) {
			updateOrganization(id: $id, input: { name: $name }) {
				__typename
				... on Organization {
					name
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);
