import { fail } from '@sveltejs/kit';
import { fieldErrors } from '#lib/field-errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import { CLIENT_LABELS } from './client-form.ts';
import {
	CLIENT_FIELDS,
	clientInput,
	readClientForm,
	requireOrgAdmin,
	rethrowAccess,
	type ShownSecret,
} from './clients.server.ts';
import type { Actions, PageServerLoad } from './$types.js';

const PAGE_SIZE = 50;

const CLIENTS = graphql(
	`
		query Clients($org: String, $limit: Int, $cursor: String) {
			oauthClients(organizationId: $org, limit: $limit, cursor: $cursor) {
				items {
					...OAuthClientFields
				}
				nextCursor
			}
		}
	`,
	[CLIENT_FIELDS],
);

const CREATE_CLIENT = graphql(
	`
		mutation CreateOAuthClient($input: CreateOAuthClientInput!) {
			createOAuthClient(input: $input) {
				__typename
				... on OAuthClientWithSecret {
					clientSecret
					client {
						id
						clientId
						name
					}
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not this query's error.
	const { organization } = await event.parent();
	const page = await listPage(event, CLIENTS, 'oauthClients', { org: organization.id, limit: PAGE_SIZE }, 'clients');
	return {
		clients: page.items,
		cursor: page.cursor,
		nextCursor: page.nextCursor,
		deleted: event.url.searchParams.has('deleted'),
	};
};

export const actions: Actions = {
	create: async (event) => {
		const organizationId = requireOrgAdmin(event);
		const values = readClientForm(await event.request.formData());
		const input = clientInput(values);

		let result: ResultOf<typeof CREATE_CLIENT>['createOAuthClient'];
		try {
			({ createOAuthClient: result } = await gql(event, CREATE_CLIENT, {
				input: { ...input, organizationId, tokenEndpointAuthMethod: values.tokenEndpointAuthMethod },
			}));
		} catch (err) {
			rethrowAccess(err);
		}
		if (result.__typename === 'UserError') {
			const errors = fieldErrors(result.details, CLIENT_LABELS, input);
			const message =
				result.code === 'invalid_request'
					? 'The client was not registered: correct the fields marked below.'
					: result.message;
			return fail(400, { values, message, errors });
		}

		// The secret is in this response only: no cache may keep it.
		event.setHeaders({ 'cache-control': 'no-store' });
		const created: ShownSecret = { ...result.client, clientSecret: result.clientSecret };
		return { created };
	},
};
