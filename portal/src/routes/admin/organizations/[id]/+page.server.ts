import { errorPage } from '#lib/server/errors.ts';
import { gql, graphql, type ResultOf } from '#lib/server/graphql.ts';
import { SUBSCRIPTION_FIELDS } from '#lib/server/subscriptions.ts';
import { rename, requirePlatformAdmin } from '../organizations.server.ts';
import type { Actions, PageServerLoad } from './$types.js';

const DETAIL = graphql(
	`
		query OrganizationDetail($id: ID!, $org: String!) {
			organization(id: $id) {
				id
				name
				isOperator
				role
				createdAt
				updatedAt
			}
			members(organizationId: $org, limit: 100) {
				items {
					userId
					role
					createdAt
					user {
						id
						email
						name
					}
				}
				nextCursor
			}
			subscriptions(organizationId: $org, limit: 100) {
				items {
					...SubscriptionFields
				}
				nextCursor
			}
		}
	`,
	[SUBSCRIPTION_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	const { organization: current } = await event.parent();
	requirePlatformAdmin(event);
	const id = event.params.id;
	let data: ResultOf<typeof DETAIL>;
	try {
		data = await gql(event, DETAIL, { id, org: id });
	} catch (err) {
		errorPage(err, { not_found: 'No such organization.' });
	}
	return {
		organization: data.organization,
		members: data.members.items,
		moreMembers: data.members.nextCursor !== null,
		subscriptions: data.subscriptions.items,
		moreSubscriptions: data.subscriptions.nextCursor !== null,
		current: current.id === id,
	};
};

export const actions: Actions = { rename };
