// What the two webhook pages share: the webhook's fields, the event catalog, and finding a webhook of the current
// organization (another organization's is not found, even for a platform admin who may read it through GraphQL).
import { error, type RequestEvent } from '@sveltejs/kit';
import { gql, graphql, GraphQLRequestError, type ResultOf } from '#lib/server/graphql.ts';

type GqlEvent = Pick<RequestEvent, 'platform' | 'cookies'>;

/** Everything shown of a webhook: never its secret, which only the create and rotate answers carry. */
export const WEBHOOK_FIELDS = graphql(`
	fragment WebhookFields on Webhook {
		id
		organizationId
		url
		events
		description
		isActive
		failing
		failingSince
		createdAt
		updatedAt
	}
`);

export type Webhook = ResultOf<typeof WEBHOOK_FIELDS>;

const WEBHOOK = graphql(
	`
		query Webhook($id: ID!) {
			webhook(id: $id) {
				...WebhookFields
			}
		}
	`,
	[WEBHOOK_FIELDS],
);

const EVENT_TYPES = graphql(`
	query EventTypes {
		eventTypes {
			kind
			group
			lists
			description
		}
	}
`);

type EventType = ResultOf<typeof EVENT_TYPES>['eventTypes'][number];

/** The catalog's kinds under their groups, in the catalog's order: what the event pickers show. */
export interface EventGroup {
	group: string;
	types: EventType[];
}

export async function eventGroups(event: GqlEvent): Promise<EventGroup[]> {
	const { eventTypes } = await gql(event, EVENT_TYPES);
	const groups = new Map<string, EventType[]>();
	for (const type of eventTypes) {
		let list = groups.get(type.group);
		if (!list) groups.set(type.group, (list = []));
		list.push(type);
	}
	return [...groups].map(([group, types]) => ({ group, types }));
}

export const NOT_FOUND = 'No such webhook in this organization.';

/**
 * Webhook `id` if it belongs to organization `organizationId`, else null: gone, another organization's, or an
 * identifier the service refuses outright all name no webhook of ours. Other refusals go on.
 */
export async function findOwnedWebhook(event: GqlEvent, id: string, organizationId: string): Promise<Webhook | null> {
	if (!id || id.length > 200) return null;
	try {
		const { webhook } = await gql(event, WEBHOOK, { id });
		return webhook.organizationId === organizationId ? webhook : null;
	} catch (err) {
		if (err instanceof GraphQLRequestError && (err.code === 'not_found' || err.code === 'invalid_request')) return null;
		throw err;
	}
}

/** Like findOwnedWebhook, with the 404 page for none. */
export async function loadOwnedWebhook(event: GqlEvent, id: string, organizationId: string): Promise<Webhook> {
	return (await findOwnedWebhook(event, id, organizationId)) ?? error(404, NOT_FOUND);
}
