import { fail } from '@sveltejs/kit';
import { userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import { field, fieldErrors, refused, type FieldErrors, requireOrgAdmin, type UserError } from '../settings.server.ts';
import { eventGroups, findOwnedWebhook, NOT_FOUND, type Webhook, WEBHOOK_FIELDS } from './webhooks.server.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';

const PAGE_SIZE = 50;

const WEBHOOKS = graphql(
	`
		query Webhooks($org: String, $limit: Int, $cursor: String) {
			webhooks(organizationId: $org, limit: $limit, cursor: $cursor) {
				items {
					...WebhookFields
				}
				nextCursor
			}
		}
	`,
	[WEBHOOK_FIELDS],
);

/** What the create and rotate answers carry: the signing secret, in this answer only. */
const WITH_SECRET = graphql(`
	fragment WebhookWithSecretFields on Webhook {
		id
		url
		secret
	}
`);

const CREATE_WEBHOOK = graphql(
	`
		mutation CreateWebhook($input: CreateWebhookInput!) {
			createWebhook(input: $input) {
				__typename
				...WebhookWithSecretFields
				...UserErrorFields
			}
		}
	`,
	[WITH_SECRET, USER_ERROR_FIELDS],
);

const UPDATE_WEBHOOK = graphql(
	`
		mutation UpdateWebhook($id: ID!, $input: UpdateWebhookInput!) {
			updateWebhook(id: $id, input: $input) {
				__typename
				... on Webhook {
					id
					url
					isActive
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const ROTATE_SECRET = graphql(
	`
		mutation RotateWebhookSecret($id: ID!) {
			rotateWebhookSecret(id: $id) {
				__typename
				...WebhookWithSecretFields
				...UserErrorFields
			}
		}
	`,
	[WITH_SECRET, USER_ERROR_FIELDS],
);

const REVEAL_SECRET = graphql(
	`
		mutation RevealWebhookSecret($id: ID!) {
			revealWebhookSecret(id: $id) {
				__typename
				... on WebhookSecret {
					secret
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const SEND_TEST = graphql(
	`
		mutation SendTestWebhook($id: ID!, $event: String!) {
			sendTestWebhook(id: $id, event: $event) {
				__typename
				... on WebhookDelivery {
					id
					event
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const DELETE_WEBHOOK = graphql(
	`
		mutation DeleteWebhook($id: ID!) {
			deleteWebhook(id: $id) {
				__typename
				... on Webhook {
					id
					url
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/** The webhook of a create or rotate answer with its signing secret, which those answers alone carry. */
function shownSecret(webhook: ResultOf<typeof WITH_SECRET>) {
	if (webhook.secret === null) throw new Error(`The answer for webhook ${webhook.id} carried no signing secret`);
	return { id: webhook.id, url: webhook.url, secret: webhook.secret };
}

/** The fields of the create and edit forms, as typed, so that a refused submission shows them again. */
export interface WebhookFormValues {
	url: string;
	description: string;
	events: string[];
}

/** The form's fields, by their GraphQL names, with the labels the form shows. */
const FORM_LABELS = { url: 'URL', events: 'Events', description: 'Description' } as const;

function readForm(form: FormData): WebhookFormValues {
	return {
		url: field(form, 'url'),
		description: field(form, 'description'),
		events: form.getAll('events').filter((v): v is string => typeof v === 'string'),
	};
}

/** A UserError as the form's message: field problems go under their fields, a conflict is said as it is. */
function refusedInput(result: UserError, failed: string) {
	return {
		message: result.code === 'invalid_request' ? `${failed}: correct the fields marked below.` : result.message,
		errors: fieldErrors(result.details, FORM_LABELS),
	};
}

/** The panel a link of the list opened (?edit=, ?test=, ?rotate=, ?delete=), with its webhook. */
const PANELS = ['edit', 'test', 'rotate', 'delete'] as const;
type PanelKind = (typeof PANELS)[number];

async function openPanel(
	event: RequestEvent,
	organizationId: string,
): Promise<{ kind: PanelKind; webhook: Webhook } | null> {
	const kind = PANELS.find((k) => event.url.searchParams.has(k));
	if (!kind) return null;
	// Gone (just deleted, with the link still in the address bar) or another organization's: no panel.
	const webhook = await findOwnedWebhook(event, event.url.searchParams.get(kind) ?? '', organizationId);
	return webhook ? { kind, webhook } : null;
}

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not this query's error.
	const { organization } = await event.parent();
	const page = await listPage(event, WEBHOOKS, 'webhooks', { org: organization.id, limit: PAGE_SIZE }, 'webhooks');
	return {
		webhooks: page.items,
		cursor: page.cursor,
		nextCursor: page.nextCursor,
		panel: await openPanel(event, organization.id),
		groups: await eventGroups(event),
		// Owners (and platform admins, owners everywhere) may see a secret again; the service decides, this hides the button.
		canReveal: event.locals.role === 'owner' || event.locals.platformAdmin,
	};
};

/** The webhook an action is about, if it is the current organization's. */
async function ownedWebhook(event: RequestEvent, form: FormData): Promise<Webhook | null> {
	const { organizationId } = requireOrgAdmin(event);
	return findOwnedWebhook(event, field(form, 'id'), organizationId);
}

export const actions: Actions = {
	create: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const values = readForm(await event.request.formData());
		let result: ResultOf<typeof CREATE_WEBHOOK>['createWebhook'];
		try {
			({ createWebhook: result } = await gql(event, CREATE_WEBHOOK, {
				input: { url: values.url, events: values.events, description: values.description, organizationId },
			}));
		} catch (err) {
			return refused(err, { action: 'create' as const, values, errors: {} as FieldErrors });
		}
		if (result.__typename === 'UserError') {
			return fail(userErrorStatus(result), {
				action: 'create' as const,
				values,
				...refusedInput(result, 'The webhook was not created'),
			});
		}
		// The secret is in this response only: no cache may keep it.
		event.setHeaders({ 'cache-control': 'no-store' });
		return { action: 'create' as const, created: shownSecret(result) };
	},

	update: async (event) => {
		const form = await event.request.formData();
		const values = readForm(form);
		const id = field(form, 'id');
		let result: ResultOf<typeof UPDATE_WEBHOOK>['updateWebhook'];
		try {
			if (!(await ownedWebhook(event, form)))
				return fail(404, { action: 'update' as const, id, values, message: NOT_FOUND, errors: {} as FieldErrors });
			({ updateWebhook: result } = await gql(event, UPDATE_WEBHOOK, {
				id,
				input: { url: values.url, events: values.events, description: values.description },
			}));
		} catch (err) {
			return refused(err, { action: 'update' as const, id, values, errors: {} as FieldErrors });
		}
		if (result.__typename === 'UserError') {
			return fail(userErrorStatus(result), {
				action: 'update' as const,
				id,
				values,
				...refusedInput(result, 'The changes were not saved'),
			});
		}
		return { action: 'update' as const, saved: { id: result.id, url: result.url } };
	},

	setActive: async (event) => {
		const form = await event.request.formData();
		const isActive = field(form, 'active') === 'true';
		let result: ResultOf<typeof UPDATE_WEBHOOK>['updateWebhook'];
		try {
			if (!(await ownedWebhook(event, form))) return fail(404, { action: 'setActive' as const, message: NOT_FOUND });
			({ updateWebhook: result } = await gql(event, UPDATE_WEBHOOK, {
				id: field(form, 'id'),
				input: { isActive },
			}));
		} catch (err) {
			return refused(err, { action: 'setActive' as const });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'setActive' as const, message: result.message });
		return { action: 'setActive' as const, changed: { id: result.id, url: result.url, isActive: result.isActive } };
	},

	rotate: async (event) => {
		const form = await event.request.formData();
		if (form.get('confirm') !== 'yes') {
			return fail(400, { action: 'rotate' as const, message: 'Confirm that the current secret may stop working.' });
		}
		let result: ResultOf<typeof ROTATE_SECRET>['rotateWebhookSecret'];
		try {
			if (!(await ownedWebhook(event, form))) return fail(404, { action: 'rotate' as const, message: NOT_FOUND });
			({ rotateWebhookSecret: result } = await gql(event, ROTATE_SECRET, {
				id: field(form, 'id'),
			}));
		} catch (err) {
			return refused(err, { action: 'rotate' as const });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'rotate' as const, message: result.message });
		event.setHeaders({ 'cache-control': 'no-store' });
		return { action: 'rotate' as const, rotated: shownSecret(result) };
	},

	/** The current secret, for an owner: the service records the reveal in the audit log. */
	reveal: async (event) => {
		const form = await event.request.formData();
		let webhook: Webhook | null;
		let result: ResultOf<typeof REVEAL_SECRET>['revealWebhookSecret'];
		try {
			webhook = await ownedWebhook(event, form);
			if (!webhook) return fail(404, { action: 'reveal' as const, message: NOT_FOUND });
			({ revealWebhookSecret: result } = await gql(event, REVEAL_SECRET, {
				id: webhook.id,
			}));
		} catch (err) {
			return refused(
				err,
				{ action: 'reveal' as const },
				{ forbidden: 'Only owners of the organization can reveal a signing secret; an admin can rotate it instead.' },
			);
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'reveal' as const, message: result.message });
		event.setHeaders({ 'cache-control': 'no-store' });
		return { action: 'reveal' as const, revealed: { id: webhook.id, url: webhook.url, secret: result.secret } };
	},

	test: async (event) => {
		const form = await event.request.formData();
		const kind = field(form, 'event');
		let result: ResultOf<typeof SEND_TEST>['sendTestWebhook'];
		try {
			if (!(await ownedWebhook(event, form))) return fail(404, { action: 'test' as const, kind, message: NOT_FOUND });
			({ sendTestWebhook: result } = await gql(event, SEND_TEST, {
				id: field(form, 'id'),
				event: kind,
			}));
		} catch (err) {
			return refused(err, { action: 'test' as const, kind });
		}
		if (result.__typename === 'UserError') {
			const message = result.code === 'invalid_request' ? 'Choose an event kind of the catalog.' : result.message;
			return fail(userErrorStatus(result), { action: 'test' as const, kind, message });
		}
		return {
			action: 'test' as const,
			kind,
			tested: { webhookId: field(form, 'id'), deliveryId: result.id, event: result.event },
		};
	},

	delete: async (event) => {
		const form = await event.request.formData();
		if (form.get('confirm') !== 'yes') {
			return fail(400, { action: 'delete' as const, message: 'Confirm which webhook is to be deleted.' });
		}
		let result: ResultOf<typeof DELETE_WEBHOOK>['deleteWebhook'];
		try {
			if (!(await ownedWebhook(event, form))) return fail(404, { action: 'delete' as const, message: NOT_FOUND });
			({ deleteWebhook: result } = await gql(event, DELETE_WEBHOOK, {
				id: field(form, 'id'),
			}));
		} catch (err) {
			return refused(err, { action: 'delete' as const });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'delete' as const, message: result.message });
		return { action: 'delete' as const, deleted: { id: result.id, url: result.url } };
	},
};
