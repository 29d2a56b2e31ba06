// What the subscriptions list and a subscription's page share: who may act, the members a seat can go to, and
// assigning and freeing a seat.
import { error, redirect, type RequestEvent } from '@sveltejs/kit';
import { graphql, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import { loginUrl } from '#lib/server/session.ts';

/**
 * Actions skip the layout: creating and changing subscriptions is for platform administrators (`platformOnly`),
 * seats for an owner or admin of the current organization too.
 */
export function requireAdmin(event: Pick<RequestEvent, 'locals' | 'url'>, platformOnly: boolean) {
	const { locals } = event;
	if (!locals.user) redirect(303, loginUrl(event.url));
	if (
		platformOnly ? !locals.platformAdmin : locals.role !== 'owner' && locals.role !== 'admin' && !locals.platformAdmin
	) {
		error(
			403,
			platformOnly
				? 'Only platform administrators create and change subscriptions.'
				: 'Only owners and admins assign seats.',
		);
	}
}

/** The members of an organization, whom its subscriptions' seats can go to (the first 100). */
export const SEAT_CANDIDATES = graphql(`
	query SeatCandidates($org: String!) {
		members(organizationId: $org, limit: 100) {
			items {
				userId
				user {
					email
				}
			}
			nextCursor
		}
	}
`);

/** Who holds the seats of subscription `$id` (the first 100). */
export const SEATS = graphql(`
	fragment SeatHolders on Query {
		subscriptionSeats(subscriptionId: $id, limit: 100) {
			items {
				userId
				user {
					email
				}
			}
		}
	}
`);

// Both answers are aliased `result`, so that one action reads either.
export const ASSIGN = graphql(
	`
		mutation AssignSeat($id: ID!, $user: ID!) {
			result: assignSeat(subscriptionId: $id, userId: $user) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

export const UNASSIGN = graphql(
	`
		mutation UnassignSeat($id: ID!, $user: ID!) {
			result: unassignSeat(subscriptionId: $id, userId: $user) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);
