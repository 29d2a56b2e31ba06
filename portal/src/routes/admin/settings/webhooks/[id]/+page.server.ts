import { fail } from '@sveltejs/kit';
import { userErrorStatus } from '#lib/server/errors.ts';
import { gql, GraphQLRequestError } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import { field, refused, requireOrgAdmin, type UserError } from '../../settings.server.ts';
import { findOwnedWebhook, loadOwnedWebhook, NOT_FOUND } from '../webhooks.server.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';

const PAGE_SIZE = 20;

const DELIVERIES = /* GraphQL */ `
	query WebhookDeliveries($webhookId: ID!, $limit: Int, $cursor: String) {
		webhookDeliveries(webhookId: $webhookId, limit: $limit, cursor: $cursor) {
			items {
				id event status attemptCount nextAttemptAt statusCode deliveredAt timestamp requestBody createdAt
				attempts { attempt startedAt durationMs success statusCode error requestHeaders responseHeaders responseBody }
			}
			nextCursor
		}
	}
`;

const DELIVERY_IDS = /* GraphQL */ `
	query WebhookDeliveryIds($webhookId: ID!, $limit: Int, $cursor: String) {
		webhookDeliveries(webhookId: $webhookId, limit: $limit, cursor: $cursor) {
			items { id }
			nextCursor
		}
	}
`;

const RETRY = /* GraphQL */ `
	mutation RetryWebhookDelivery($id: ID!) {
		retryWebhookDelivery(id: $id) {
			__typename
			... on WebhookDelivery { id event status }
			... on UserError { code message }
		}
	}
`;

export interface Attempt {
	attempt: number;
	startedAt: string;
	durationMs: number;
	success: boolean;
	statusCode: number | null;
	error: string | null;
	requestHeaders: Record<string, string>;
	responseHeaders: Record<string, string> | null;
	responseBody: string | null;
}

export interface Delivery {
	id: string;
	event: string;
	status: 'pending' | 'delivered' | 'failed';
	attemptCount: number;
	nextAttemptAt: string | null;
	statusCode: number | null;
	deliveredAt: string | null;
	timestamp: string;
	requestBody: string;
	createdAt: string;
	attempts: Attempt[];
}

type Retried = { __typename: 'WebhookDelivery'; id: string; event: string; status: string };

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members.
	const { organization } = await event.parent();
	const webhook = await loadOwnedWebhook(event, event.params.id, organization.id);
	const page = await listPage<Delivery>(event, DELIVERIES, 'webhookDeliveries', { webhookId: webhook.id, limit: PAGE_SIZE }, 'deliveries');
	return { webhook, deliveries: page.items, cursor: page.cursor, nextCursor: page.nextCursor };
};

/** How many pages of 100 a retry looks through, from the page it was shown on: newer deliveries push it down. */
const SEARCH_PAGES = 5;

/**
 * Whether delivery `id` is one of webhook `webhookId`'s. Retrying checks only the caller's role in the delivery's
 * organization, and a platform admin has one everywhere: this page retries its own webhook's deliveries only.
 */
async function deliveryOf(event: RequestEvent, webhookId: string, id: string, from: string | null): Promise<boolean> {
	let cursor = from;
	for (let i = 0; i < SEARCH_PAGES; i++) {
		const { webhookDeliveries: page }: { webhookDeliveries: { items: { id: string }[]; nextCursor: string | null } } = await gql(event, DELIVERY_IDS, {
			webhookId,
			limit: 100,
			cursor
		});
		if (page.items.some((d) => d.id === id)) return true;
		cursor = page.nextCursor;
		if (!cursor) return false;
	}
	return false;
}

export const actions: Actions = {
	retry: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const id = field(form, 'id');
		let result: Retried | UserError;
		try {
			const webhook = await findOwnedWebhook(event, event.params.id, organizationId);
			if (!webhook) return fail(404, { action: 'retry' as const, id, message: NOT_FOUND });
			if (!id || !(await deliveryOf(event, webhook.id, id, field(form, 'cursor') || null))) {
				return fail(404, { action: 'retry' as const, id, message: 'No such delivery of this webhook.' });
			}
			({ retryWebhookDelivery: result } = await gql<{ retryWebhookDelivery: typeof result }>(event, RETRY, { id }));
		} catch (err) {
			if (err instanceof GraphQLRequestError && err.code === 'invalid_request') {
				return fail(404, { action: 'retry' as const, id, message: 'No such delivery of this webhook.' });
			}
			return refused(err, { action: 'retry' as const, id });
		}
		if (result.__typename === 'UserError') {
			return fail(userErrorStatus(result), { action: 'retry' as const, id, message: result.message });
		}
		return { action: 'retry' as const, id, retried: { id: result.id, event: result.event } };
	}
};
