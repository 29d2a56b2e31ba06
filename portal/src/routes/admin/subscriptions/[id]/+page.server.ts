import { error, fail, redirect } from '@sveltejs/kit';
import { errorPage, refused, userErrorFailure } from '#lib/server/errors.ts';
import { gql, type UserError } from '#lib/server/graphql.ts';
import { loginUrl } from '#lib/server/session.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';
import { formText } from '#lib/form.ts';

interface Subscription {
	id: string;
	organization: { id: string; name: string };
	product: { id: string; name: string; slug: string };
	totalSeats: number;
	assignedSeats: number;
	status: string;
	endDate: string | null;
}
interface Person {
	userId: string;
	user: { id: string; email: string; name: string };
}
type Page<T> = { items: T[]; nextCursor: string | null };

const SUBSCRIPTION = `query($id: ID!) {
	subscription(id: $id) { id organization { id name } product { id name slug } totalSeats assignedSeats status endDate }
	subscriptionSeats(subscriptionId: $id, limit: 100) { items { userId user { id email name } } nextCursor }
}`;
const MEMBERS =
	'query($org: String!) { members(organizationId: $org, limit: 100) { items { userId user { id email name } } nextCursor } }';
const USER_ERROR = '... on UserError { code message details { path message } }';
const ASSIGN = `mutation($id: ID!, $user: ID!) { assignSeat(subscriptionId: $id, userId: $user) { __typename ${USER_ERROR} } }`;
const UNASSIGN = `mutation($id: ID!, $user: ID!) { unassignSeat(subscriptionId: $id, userId: $user) { __typename ${USER_ERROR} } }`;
const CANCEL = `mutation($id: ID!) { cancelSubscription(id: $id) { __typename ${USER_ERROR} } }`;

/**
 * One subscription's seats, given to the members of its organization: that organization's owners and admins, and
 * platform administrators for every organization's (the service decides; another tenant's subscription is 404).
 */
export const load: PageServerLoad = async (event) => {
	await event.parent();
	let data: { subscription: Subscription; subscriptionSeats: Page<Person> };
	let members: Page<Person>;
	try {
		data = await gql<typeof data>(event, SUBSCRIPTION, { id: event.params.id });
		({ members } = await gql<{ members: Page<Person> }>(event, MEMBERS, { org: data.subscription.organization.id }));
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

/** Actions skip the layout: an owner or admin of the current organization, or a platform administrator. */
function requireSeatAdmin(event: RequestEvent) {
	const { locals } = event;
	if (!locals.user) redirect(303, loginUrl(event.url));
	if (locals.role !== 'owner' && locals.role !== 'admin' && !locals.platformAdmin)
		error(403, 'Only owners and admins assign seats.');
}

async function seat(event: RequestEvent, document: string, done: string) {
	requireSeatAdmin(event);
	const form = await event.request.formData();
	const variables = { id: event.params.id, user: formText(form, 'userId') };
	let result: { __typename: string } | UserError;
	try {
		result = Object.values(
			await gql<Record<string, { __typename: string } | UserError>>(event, document, variables),
		)[0]!;
	} catch (err) {
		return refused(err, { problems: [] as string[] });
	}
	return result.__typename === 'UserError' ? userErrorFailure(result as UserError, {}, { userId: 'Member' }) : { done };
}

/**
 * Cancelling is apart from every other form of the subscription, and asks for a confirmation: without the box
 * ticked, nothing is sent to the API, whatever posted the form.
 */
async function cancel(event: RequestEvent) {
	const { locals } = event;
	if (!locals.user) redirect(303, loginUrl(event.url));
	if (!locals.platformAdmin) error(403, 'Only platform administrators create and change subscriptions.');
	const form = await event.request.formData();
	if (form.get('confirm') !== 'yes')
		return fail(400, {
			message: 'Nothing was cancelled: tick the box to confirm the cancellation.',
			problems: [] as string[],
			confirmNeeded: true,
		});
	let result: { __typename: string } | UserError;
	try {
		({ cancelSubscription: result } = await gql<{ cancelSubscription: { __typename: string } | UserError }>(
			event,
			CANCEL,
			{ id: event.params.id },
		));
	} catch (err) {
		return refused(err, { problems: [] as string[] });
	}
	return result.__typename === 'UserError'
		? userErrorFailure(result as UserError, {})
		: { done: 'Subscription cancelled: its seats no longer give licenses.' };
}

export const actions: Actions = {
	assign: (event) => seat(event, ASSIGN, 'Seat assigned.'),
	unassign: (event) => seat(event, UNASSIGN, 'Seat freed.'),
	cancel,
};
