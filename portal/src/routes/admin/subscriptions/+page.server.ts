import { fail } from '@sveltejs/kit';
import { errorPage, userErrorFailure } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import type { Actions, PageServerLoad } from './$types.js';
import { formText } from '#lib/form.ts';
import { SUBSCRIPTION_FIELDS } from '#lib/server/subscriptions.ts';
import { ASSIGN, requireAdmin, SEAT_CANDIDATES, SEATS, UNASSIGN } from './subscriptions.server.ts';

const STATUSES = ['active', 'trial', 'cancelled', 'expired'] as const;
const BILLING_CYCLES = ['monthly', 'yearly'] as const;

const LIST = graphql(
	`
		query Subscriptions($org: String, $status: SubscriptionStatus, $cursor: String) {
			subscriptions(organizationId: $org, status: $status, limit: 100, cursor: $cursor) {
				items {
					...SubscriptionFields
					pricePerSeat
					billingCycle
				}
				nextCursor
			}
		}
	`,
	[SUBSCRIPTION_FIELDS],
);

const CHOICES = graphql(`
	query SubscriptionChoices {
		organizations(limit: 100) {
			items {
				id
				name
			}
		}
		products(limit: 100) {
			items {
				id
				name
				slug
			}
		}
	}
`);

const SEAT_HOLDERS = graphql(
	`
		query SubscriptionSeats($id: ID!) {
			...SeatHolders
		}
	`,
	[SEATS],
);

const CREATE = graphql(
	`
		mutation CreateSubscription($input: CreateSubscriptionInput!) {
			createSubscription(input: $input) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const UPDATE = graphql(
	`
		mutation UpdateSubscription($id: ID!, $input: UpdateSubscriptionInput!) {
			updateSubscription(id: $id, input: $input) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	const { organization } = await event.parent();
	const platform = event.locals.platformAdmin;
	const q = event.url.searchParams;
	const status = STATUSES.find((s) => s === q.get('status')) ?? null;
	// Platform admins see every organization (or the one filtered); an organization's admins see theirs.
	const org = platform ? q.get('organization') || null : organization.id;
	let page: ResultOf<typeof LIST>['subscriptions'];
	try {
		({ subscriptions: page } = await gql(event, LIST, { org, status, cursor: q.get('cursor') }));
	} catch (err) {
		errorPage(err, {
			invalid_request: 'That page of subscriptions does not exist.',
			not_found: 'No such organization.',
		});
	}
	const choices = platform ? await gql(event, CHOICES) : null;
	// Seats are assigned here for the current organization's subscriptions; another organization's (platform admins)
	// on the subscription's page, which lists that organization's members.
	const own = page.items.filter((s) => s.organization.id === organization.id);
	const [members, seats] = await Promise.all([
		gql(event, SEAT_CANDIDATES, { org: organization.id }).then((d) => d.members.items),
		Promise.all(
			own.map((s) => gql(event, SEAT_HOLDERS, { id: s.id }).then((d) => [s.id, d.subscriptionSeats.items] as const)),
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
		const totalSeats = int(text(f, 'totalSeats'));
		if (typeof totalSeats !== 'number') return fail(400, { message: 'Seats must be a whole number.', problems: [] });
		const billingCycle = BILLING_CYCLES.find((c) => c === text(f, 'billingCycle'));
		const status = STATUSES.find((s) => s === text(f, 'status'));
		if (!billingCycle || !status) return fail(400, { message: 'Choose a billing cycle and a status.', problems: [] });
		const input = {
			organizationId: text(f, 'organizationId'),
			productId: text(f, 'productId'),
			totalSeats,
			pricePerSeat: text(f, 'pricePerSeat'),
			billingCycle,
			status,
			endDate: endDate(text(f, 'endDate')),
		};
		const { createSubscription: result } = await gql(event, CREATE, { input });
		if (result.__typename === 'UserError') return userErrorFailure(result, {}, LABELS);
		return { done: 'Subscription created.' };
	},
	update: async (event) => {
		requireAdmin(event, true);
		const f = await event.request.formData();
		const totalSeats = int(text(f, 'totalSeats'));
		if (typeof totalSeats !== 'number') return fail(400, { message: 'Seats must be a whole number.', problems: [] });
		const status = STATUSES.find((s) => s === text(f, 'status'));
		if (!status) return fail(400, { message: 'Choose a status.', problems: [] });
		const input = { totalSeats, pricePerSeat: text(f, 'pricePerSeat'), status, endDate: endDate(text(f, 'endDate')) };
		const { updateSubscription: result } = await gql(event, UPDATE, { id: text(f, 'id'), input });
		if (result.__typename === 'UserError') return userErrorFailure(result, {}, LABELS);
		return { done: 'Subscription saved.' };
	},
	assign: async (event) => {
		requireAdmin(event, false);
		const f = await event.request.formData();
		const { result } = await gql(event, ASSIGN, { id: text(f, 'id'), user: text(f, 'userId') });
		if (result.__typename === 'UserError') return userErrorFailure(result, {}, LABELS);
		return { done: 'Seat assigned.' };
	},
	unassign: async (event) => {
		requireAdmin(event, false);
		const f = await event.request.formData();
		const { result } = await gql(event, UNASSIGN, { id: text(f, 'id'), user: text(f, 'userId') });
		if (result.__typename === 'UserError') return userErrorFailure(result, {}, LABELS);
		return { done: 'Seat freed.' };
	},
};
