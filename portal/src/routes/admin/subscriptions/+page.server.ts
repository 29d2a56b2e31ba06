import { error, fail, redirect } from '@sveltejs/kit';
import { errorPage, userErrorFailure } from '#lib/server/errors.ts';
import { gql, type UserError } from '#lib/server/graphql.ts';
import { loginUrl } from '#lib/server/session.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';
import { formText } from '#lib/form.ts';

export interface Subscription {
	id: string;
	organization: { id: string; name: string };
	product: { id: string; name: string; slug: string };
	totalSeats: number;
	assignedSeats: number;
	pricePerSeat: string;
	billingCycle: string;
	status: string;
	endDate: string | null;
}
interface Seat {
	userId: string;
	user: { id: string; email: string; name: string };
}

const STATUSES = ['active', 'trial', 'cancelled', 'expired'];
const FIELDS =
	'id organization { id name } product { id name slug } totalSeats assignedSeats pricePerSeat billingCycle status endDate';
const USER_ERROR = '... on UserError { code message details { path message } }';
const LIST = `query($org: String, $status: SubscriptionStatus, $cursor: String) {
	subscriptions(organizationId: $org, status: $status, limit: 100, cursor: $cursor) { items { ${FIELDS} } nextCursor } }`;
const CHOICES =
	'query { organizations(limit: 100) { items { id name } } products(limit: 100) { items { id name slug } } }';
const SEATS = `query($id: ID!) { subscriptionSeats(subscriptionId: $id, limit: 100) { items { userId user { id email name } } } }`;
const MEMBERS =
	'query($org: String!) { members(organizationId: $org, limit: 100) { items { userId user { id email name } } } }';
const CREATE = `mutation($input: CreateSubscriptionInput!) { createSubscription(input: $input) { __typename ${USER_ERROR} } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateSubscriptionInput!) { updateSubscription(id: $id, input: $input) { __typename ${USER_ERROR} } }`;
const ASSIGN = `mutation($id: ID!, $user: ID!) { assignSeat(subscriptionId: $id, userId: $user) { __typename ${USER_ERROR} } }`;
const UNASSIGN = `mutation($id: ID!, $user: ID!) { unassignSeat(subscriptionId: $id, userId: $user) { __typename ${USER_ERROR} } }`;

export const load: PageServerLoad = async (event) => {
	const { organization } = await event.parent();
	const platform = event.locals.platformAdmin;
	const q = event.url.searchParams;
	const status = STATUSES.includes(q.get('status') ?? '') ? q.get('status') : null;
	// Platform admins see every organization (or the one filtered); an organization's admins see theirs.
	const org = platform ? q.get('organization') || null : organization.id;
	let page: { items: Subscription[]; nextCursor: string | null };
	try {
		({ subscriptions: page } = await gql<{ subscriptions: typeof page }>(event, LIST, {
			org,
			status,
			cursor: q.get('cursor'),
		}));
	} catch (err) {
		errorPage(err, {
			invalid_request: 'That page of subscriptions does not exist.',
			not_found: 'No such organization.',
		});
	}
	const choices = platform
		? await gql<{
				organizations: { items: { id: string; name: string }[] };
				products: { items: { id: string; name: string; slug: string }[] };
			}>(event, CHOICES)
		: null;
	// Seats are assigned here for the current organization's subscriptions; another organization's (platform admins)
	// on the subscription's page, which lists that organization's members.
	const own = page.items.filter((s) => s.organization.id === organization.id);
	const [members, seats] = await Promise.all([
		gql<{ members: { items: Seat[] } }>(event, MEMBERS, { org: organization.id }).then((d) => d.members.items),
		Promise.all(
			own.map((s) =>
				gql<{ subscriptionSeats: { items: Seat[] } }>(event, SEATS, { id: s.id }).then(
					(d) => [s.id, d.subscriptionSeats.items] as const,
				),
			),
		),
	]);
	return {
		subscriptions: page.items,
		nextCursor: page.nextCursor,
		platform,
		filters: { organization: org ?? '', status: status ?? '' },
		organizations: choices?.organizations.items ?? [],
		products: choices?.products.items ?? [],
		currentOrganization: organization.id,
		members,
		seats: Object.fromEntries(seats),
		statuses: STATUSES,
	};
};

function requireAdmin(event: RequestEvent, platformOnly: boolean) {
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

/** The forms' labels, by the GraphQL names of the subscription's fields: a problem names the field as the form does. */
const LABELS = {
	organizationId: 'Organization',
	productId: 'Product',
	totalSeats: 'Seats',
	pricePerSeat: 'Price per seat',
	billingCycle: 'Billing cycle',
	status: 'Status',
	endDate: 'End date',
	userId: 'Member',
};

async function run(event: RequestEvent, document: string, variables: Record<string, unknown>, done: string) {
	const data = await gql<Record<string, { __typename: string } | UserError>>(event, document, variables);
	const result = Object.values(data)[0]!;
	return result.__typename === 'UserError' ? userErrorFailure(result as UserError, {}, LABELS) : { done };
}

const text = (form: FormData, name: string) => formText(form, name).trim();
/**
 * An <input type="date"> value as the end of no time zone's day: midnight UTC; empty means no end date. Sent as
 * text, not through Date, which would turn 2027-02-30 into 2 March: the API refuses an impossible day.
 */
const endDate = (value: string) => (value ? `${value}T00:00:00Z` : null);
const int = (value: string) => (/^\d+$/.test(value) ? Number(value) : value);

export const actions: Actions = {
	create: async (event) => {
		requireAdmin(event, true);
		const f = await event.request.formData();
		const input = {
			organizationId: text(f, 'organizationId'),
			productId: text(f, 'productId'),
			totalSeats: int(text(f, 'totalSeats')),
			pricePerSeat: text(f, 'pricePerSeat'),
			billingCycle: text(f, 'billingCycle'),
			status: text(f, 'status'),
			endDate: endDate(text(f, 'endDate')),
		};
		if (typeof input.totalSeats !== 'number')
			return fail(400, { message: 'Seats must be a whole number.', problems: [] });
		if (!['monthly', 'yearly'].includes(input.billingCycle) || !STATUSES.includes(input.status))
			return fail(400, { message: 'Choose a billing cycle and a status.', problems: [] });
		return run(event, CREATE, { input }, 'Subscription created.');
	},
	update: async (event) => {
		requireAdmin(event, true);
		const f = await event.request.formData();
		const seats = int(text(f, 'totalSeats'));
		if (typeof seats !== 'number') return fail(400, { message: 'Seats must be a whole number.', problems: [] });
		const status = text(f, 'status');
		if (!STATUSES.includes(status)) return fail(400, { message: 'Choose a status.', problems: [] });
		const input = {
			totalSeats: seats,
			pricePerSeat: text(f, 'pricePerSeat'),
			status,
			endDate: endDate(text(f, 'endDate')),
		};
		return run(event, UPDATE, { id: text(f, 'id'), input }, 'Subscription saved.');
	},
	assign: async (event) => {
		requireAdmin(event, false);
		const f = await event.request.formData();
		return run(event, ASSIGN, { id: text(f, 'id'), user: text(f, 'userId') }, 'Seat assigned.');
	},
	unassign: async (event) => {
		requireAdmin(event, false);
		const f = await event.request.formData();
		return run(event, UNASSIGN, { id: text(f, 'id'), user: text(f, 'userId') }, 'Seat freed.');
	},
};
