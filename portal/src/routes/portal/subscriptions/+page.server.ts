import { gql, graphql } from '#lib/server/graphql.ts';
import { SUBSCRIPTION_FIELDS } from '#lib/server/subscriptions.ts';
import type { PageServerLoad } from './$types.js';

const SUBSCRIPTIONS = graphql(
	`
		query MySubscriptions($org: String!) {
			subscriptions(organizationId: $org, limit: 100) {
				items {
					...SubscriptionFields
					billingCycle
				}
			}
			myLicenses {
				licenses
			}
		}
	`,
	[SUBSCRIPTION_FIELDS],
);

/** The current organization's subscriptions, and which of them give the user a license. */
export const load: PageServerLoad = async (event) => {
	const { organization } = await event.parent();
	const data = await gql(event, SUBSCRIPTIONS, { org: organization.id });
	return { subscriptions: data.subscriptions.items, licenses: data.myLicenses.licenses };
};
