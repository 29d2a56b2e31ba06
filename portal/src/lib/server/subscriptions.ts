// A subscription as the pages show it, in the platform's lists, an organization's, a member's and the selects that
// offer its seats: one selection, which each page adds to.
import { graphql, type ResultOf } from './graphql.ts';

/** Whose subscription, of what, how many of its seats are taken, and whether it still runs. */
export const SUBSCRIPTION_FIELDS = graphql(`
	fragment SubscriptionFields on Subscription {
		id
		organization {
			id
			name
		}
		product {
			id
			name
			slug
		}
		totalSeats
		assignedSeats
		status
		endDate
	}
`);

export type Subscription = ResultOf<typeof SUBSCRIPTION_FIELDS>;
