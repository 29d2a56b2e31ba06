import { fail } from '@sveltejs/kit';
import { errorPage, refused, userErrorFailure } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';
import { formText } from '#lib/form.ts';
import { SUBSCRIPTION_FIELDS } from '#lib/server/subscriptions.ts';
import { ASSIGN, requireAdmin, SEAT_CANDIDATES, SEATS, UNASSIGN } from '../subscriptions.server.ts';

const SUBSCRIPTION = graphql(
	`
		query Subscription($id: ID!) {
			subscription(id: $id) {
				...SubscriptionFields
			}
			...SeatHolders
		}
	`,
	[SUBSCRIPTION_FIELDS, SEATS],
);

const CANCEL = graphql(
	`
		mutation CancelSubscription($id: ID!) {
			cancelSubscription(id: $id) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/**
 * One subscription's seats, given to the members of its organization: that organization's owners and admins, and
 * platform administrators for every organization's (the service decides; another tenant's subscription is 404).
 */
export const load: PageServerLoad = async (event) => {
	await event.parent();
	let data: ResultOf<typeof SUBSCRIPTION>;
	let members: ResultOf<typeof SEAT_CANDIDATES>['members'];
	try {
		data = await gql(event, SUBSCRIPTION, { id: event.params.id });
		({ members } = await gql(event, SEAT_CANDIDATES, { org: data.subscription.organization.id }));
	} catch (err) {
		errorPage(err, { not_found: 'No such subscription.' });
	}
	const seated = new Set(data.subscriptionSeats.items.map((s) => s.userId));
	return {
		subscription: data.subscription,
		seats: data.subscriptionSeats.items,
		unseated: members.items.filter((m) => !seated.has(m.userId)),
		moreMembers: members.nextCursor !== null,
		platform: event.locals.platformAdmin,
	};
};

async function seat(event: RequestEvent, document: typeof ASSIGN | typeof UNASSIGN, done: string) {
	requireAdmin(event, false);
	const form = await event.request.formData();
	const variables = { id: event.params.id, user: formText(form, 'userId') };
	let result: ResultOf<typeof ASSIGN | typeof UNASSIGN>['result'];
	try {
		({ result } = await gql(event, document, variables));
	} catch (err) {
		return refused(err, { problems: [] as string[] });
	}
	return result.__typename === 'UserError' ? userErrorFailure(result, {}, { userId: 'Member' }) : { done };
}

/**
 * Cancelling is apart from every other form of the subscription, and asks for a confirmation: without the box
 * ticked, nothing is sent to the API, whatever posted the form.
 */
async function cancel(event: RequestEvent) {
	requireAdmin(event, true);
	const form = await event.request.formData();
	if (form.get('confirm') !== 'yes')
		return fail(400, {
			message: 'Nothing was cancelled: tick the box to confirm the cancellation.',
			problems: [] as string[],
			confirmNeeded: true,
		});
	let result: ResultOf<typeof CANCEL>['cancelSubscription'];
	try {
		({ cancelSubscription: result } = await gql(event, CANCEL, { id: event.params.id }));
	} catch (err) {
		return refused(err, { problems: [] as string[] });
	}
	return result.__typename === 'UserError'
		? userErrorFailure(result, {})
		: { done: 'Subscription cancelled: its seats no longer give licenses.' };
}

export const actions: Actions = {
	assign: (event) => seat(event, ASSIGN, 'Seat assigned.'),
	unassign: (event) => seat(event, UNASSIGN, 'Seat freed.'),
	cancel,
};
