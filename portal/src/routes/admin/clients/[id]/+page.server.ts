import { fail, redirect } from '@sveltejs/kit';
import { fieldErrors } from '#lib/field-errors.ts';
import { gql, graphql, type ResultOf, type VariablesOf, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import {
	clientInput,
	loadOwnedClient,
	readClientForm,
	requireOrgAdmin,
	rethrowAccess,
	type ShownSecret,
} from '../clients.server.ts';
import { CLIENT_LABELS } from '../client-form.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';

const UPDATE_CLIENT = graphql(
	`
		mutation UpdateOAuthClient($id: ID!, $input: UpdateOAuthClientInput!) {
			updateOAuthClient(id: $id, input: $input) {
				__typename
				... on OAuthClient {
					id
					enabled
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const ROTATE_SECRET = graphql(
	`
		mutation RotateOAuthClientSecret($id: ID!) {
			rotateOAuthClientSecret(id: $id) {
				__typename
				... on OAuthClientWithSecret {
					clientSecret
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const DELETE_CLIENT = graphql(
	`
		mutation DeleteOAuthClient($id: ID!) {
			deleteOAuthClient(id: $id) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

type UpdateResult = ResultOf<typeof UPDATE_CLIENT>['updateOAuthClient'];
type RotateResult = ResultOf<typeof ROTATE_SECRET>['rotateOAuthClientSecret'];
type DeleteResult = ResultOf<typeof DELETE_CLIENT>['deleteOAuthClient'];

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members.
	const { organization } = await event.parent();
	return { client: await loadOwnedClient(event, event.params.id, organization.id) };
};

/** The client this action is about, checked to belong to the current organization like the page itself. */
function ownedClient(event: RequestEvent) {
	return loadOwnedClient(event, event.params.id, requireOrgAdmin(event));
}

async function update(
	event: RequestEvent,
	id: string,
	input: VariablesOf<typeof UPDATE_CLIENT>['input'],
): Promise<UpdateResult> {
	try {
		return (await gql(event, UPDATE_CLIENT, { id, input })).updateOAuthClient;
	} catch (err) {
		rethrowAccess(err);
	}
}

export const actions: Actions = {
	update: async (event) => {
		const client = await ownedClient(event);
		const values = readClientForm(await event.request.formData());
		const input = clientInput(values);
		const result = await update(event, client.id, input);
		if (result.__typename === 'UserError') {
			const errors = fieldErrors(result.details, CLIENT_LABELS, input);
			const message =
				result.code === 'invalid_request'
					? 'The changes were not saved: correct the fields marked below.'
					: result.message;
			return fail(400, { action: 'update' as const, values, message, errors });
		}
		return { action: 'update' as const, saved: true };
	},

	setEnabled: async (event) => {
		const client = await ownedClient(event);
		const enabled = (await event.request.formData()).get('enabled') === 'true';
		const result = await update(event, client.id, { enabled });
		if (result.__typename === 'UserError') return fail(400, { action: 'setEnabled' as const, message: result.message });
		return { action: 'setEnabled' as const, enabled: result.enabled };
	},

	rotate: async (event) => {
		const client = await ownedClient(event);
		if (!(await event.request.formData()).has('confirm')) {
			return fail(400, { action: 'rotate' as const, message: 'Confirm that the current secret may stop working.' });
		}
		let result: RotateResult;
		try {
			({ rotateOAuthClientSecret: result } = await gql(event, ROTATE_SECRET, { id: client.id }));
		} catch (err) {
			rethrowAccess(err);
		}
		if (result.__typename === 'UserError') return fail(400, { action: 'rotate' as const, message: result.message });
		// The secret is in this response only: no cache may keep it.
		event.setHeaders({ 'cache-control': 'no-store' });
		const rotated: ShownSecret = {
			id: client.id,
			clientId: client.clientId,
			name: client.name,
			clientSecret: result.clientSecret,
		};
		return { action: 'rotate' as const, rotated };
	},

	delete: async (event) => {
		const client = await ownedClient(event);
		if (!(await event.request.formData()).has('confirm')) {
			return fail(400, { action: 'delete' as const, message: `Confirm that “${client.name}” is to be deleted.` });
		}
		let result: DeleteResult;
		try {
			({ deleteOAuthClient: result } = await gql(event, DELETE_CLIENT, {
				id: client.id,
			}));
		} catch (err) {
			rethrowAccess(err);
		}
		if (result.__typename === 'UserError') return fail(400, { action: 'delete' as const, message: result.message });
		redirect(303, '/admin/clients?deleted');
	},
};
