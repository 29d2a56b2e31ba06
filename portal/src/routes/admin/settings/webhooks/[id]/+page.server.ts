import { fail } from '@sveltejs/kit';
import { userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, GraphQLRequestError, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import { field, refused, requireOrgAdmin } from '../../settings.server.ts';
import { findOwnedWebhook, loadOwnedWebhook, NOT_FOUND } from '../webhooks.server.ts';
import type { Actions, PageServerLoad } from './$types.js';

const PAGE_SIZE = 20;

const DELIVERIES = graphql(`
	query WebhookDeliveries($webhookId: ID!, $limit: Int, $cursor: String) {
		webhookDeliveries(webhookId: $webhookId, limit: $limit, cursor: $cursor) {
			items {
				id
				event
				status
				attemptCount
				nextAttemptAt
				statusCode
				deliveredAt
				timestamp
				requestBody
				createdAt
				attempts {
					attempt
					manual
					startedAt
					durationMs
					success
					statusCode
					error
					requestHeaders
					responseHeaders
					responseBody
				}
			}
			nextCursor
		}
	}
`);

const RETRY = graphql(
	`
		mutation RetryWebhookDelivery($id: ID!, $webhookId: ID!) {
			retryWebhookDelivery(id: $id, webhookId: $webhookId) {
				__typename
				... on WebhookDelivery {
					id
					event
					status
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members.
	const { organization } = await event.parent();
	const webhook = await loadOwnedWebhook(event, event.params.id, organization.id);
	const page = await listPage(
		event,
		DELIVERIES,
		'webhookDeliveries',
		{ webhookId: webhook.id, limit: PAGE_SIZE },
		'deliveries',
	);
	return { webhook, deliveries: page.items, cursor: page.cursor, nextCursor: page.nextCursor };
};

export const actions: Actions = {
	retry: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const id = field(form, 'id');
		let result: ResultOf<typeof RETRY>['retryWebhookDelivery'];
		try {
			const webhook = await findOwnedWebhook(event, event.params.id, organizationId);
			if (!webhook) return fail(404, { action: 'retry' as const, id, message: NOT_FOUND });
			if (!id) return fail(404, { action: 'retry' as const, id, message: 'No such delivery of this webhook.' });
			// Retrying checks the caller's role in the delivery's organization, and a platform admin has one everywhere:
			// naming the webhook makes the service refuse a delivery of any other (not found).
			({ retryWebhookDelivery: result } = await gql(event, RETRY, {
				id,
				webhookId: webhook.id,
			}));
		} catch (err) {
			if (err instanceof GraphQLRequestError && (err.code === 'invalid_request' || err.code === 'not_found')) {
				return fail(404, { action: 'retry' as const, id, message: 'No such delivery of this webhook.' });
			}
			return refused(err, { action: 'retry' as const, id });
		}
		if (result.__typename === 'UserError') {
			return fail(userErrorStatus(result), { action: 'retry' as const, id, message: result.message });
		}
		return { action: 'retry' as const, id, retried: { id: result.id, event: result.event } };
	},
};
