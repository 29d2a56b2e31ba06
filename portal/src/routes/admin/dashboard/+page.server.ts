import { gql, graphql, type ResultOf } from '#lib/server/graphql.ts';
import type { PageServerLoad } from './$types.js';

const RECENT_ENTRIES = 5;

const DASHBOARD = graphql(`
	query AdminDashboard($org: String!, $recent: Int!) {
		organizationOverview(organizationId: $org) {
			members
			activeSubscriptions
			seatsUsed
			seatsTotal
			oauthClients
			webhooks
			failingWebhooks
			gettingStarted {
				product
				oauthClient
				webhook
				invitation
			}
			platform {
				organizations
				users
				products
			}
		}
		auditLogs(organizationId: $org, limit: $recent) {
			items {
				id
				action
				outcome
				createdAt
				actor {
					type
					name
					email
				}
			}
		}
	}
`);

type Overview = ResultOf<typeof DASHBOARD>['organizationOverview'];

/** One step of "Getting started": done once the data shows it, else a link to the page that does it. */
export interface Step {
	key: keyof Overview['gettingStarted'];
	label: string;
	href: string;
	done: boolean;
}

/** The steps in the order a new organization takes them; the product only for platform admins (null otherwise). */
function stepsOf({ product, oauthClient, webhook, invitation }: Overview['gettingStarted']): Step[] {
	return [
		...(product === null
			? []
			: [
					{
						key: 'product' as const,
						label: 'Add the first product to the catalog',
						href: '/admin/products',
						done: product,
					},
				]),
		{ key: 'oauthClient', label: 'Register an OAuth client', href: '/admin/clients', done: oauthClient },
		{ key: 'webhook', label: 'Add a webhook', href: '/admin/settings/webhooks', done: webhook },
		{
			key: 'invitation',
			label: 'Invite someone to the organization',
			href: '/admin/settings/members',
			done: invitation,
		},
	];
}

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not this query's error.
	const { organization } = await event.parent();
	const { organizationOverview: overview, auditLogs } = await gql(event, DASHBOARD, {
		org: organization.id,
		recent: RECENT_ENTRIES,
	});
	return { overview, steps: stepsOf(overview.gettingStarted), recent: auditLogs.items };
};
