import { errorPage } from '#lib/server/errors.ts';
import { gql, type Role } from '#lib/server/graphql.ts';
import { rename, requirePlatformAdmin } from '../organizations.server.ts';
import type { Actions, PageServerLoad } from './$types.js';

interface Organization {
	id: string;
	name: string;
	isOperator: boolean;
	role: Role | null;
	createdAt: string;
	updatedAt: string;
}
interface Member {
	userId: string;
	role: Role;
	createdAt: string;
	user: { id: string; email: string; name: string };
}
interface Subscription {
	id: string;
	product: { id: string; name: string; slug: string };
	totalSeats: number;
	assignedSeats: number;
	status: string;
	endDate: string | null;
}
type Page<T> = { items: T[]; nextCursor: string | null };

const DETAIL = `query($id: ID!, $org: String!) {
	organization(id: $id) { id name isOperator role createdAt updatedAt }
	members(organizationId: $org, limit: 100) { items { userId role createdAt user { id email name } } nextCursor }
	subscriptions(organizationId: $org, limit: 100) { items { id product { id name slug } totalSeats assignedSeats status endDate } nextCursor }
}`;

export const load: PageServerLoad = async (event) => {
	const { organization: current } = await event.parent();
	requirePlatformAdmin(event);
	const id = event.params.id;
	let data: { organization: Organization; members: Page<Member>; subscriptions: Page<Subscription> };
	try {
		data = await gql<typeof data>(event, DETAIL, { id, org: id });
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
