import { fail } from '@sveltejs/kit';
import { fieldErrors } from '#lib/field-errors.ts';
import { formText } from '#lib/form.ts';
import { userErrorFailure } from '#lib/server/errors.ts';
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

/** The token form's fields, as its refusals name them. */
const TOKEN_LABELS = { name: 'Token name', scopes: 'Scopes its clients may be given' };

const REGISTRATION_TOKENS = graphql(`
	query RegistrationTokens($org: String) {
		registrationTokens(organizationId: $org) {
			id
			name
			scopes
			public
			lastUsedAt
			createdAt
		}
	}
`);

const CREATE_REGISTRATION_TOKEN = graphql(
	`
		mutation CreateRegistrationToken($input: CreateRegistrationTokenInput!) {
			createRegistrationToken(input: $input) {
				__typename
				... on RegistrationToken {
					id
					name
					token
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const DELETE_REGISTRATION_TOKEN = graphql(
	`
		mutation DeleteRegistrationToken($id: ID!) {
			deleteRegistrationToken(id: $id) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not this query's error.
	const { organization } = await event.parent();
	const [page, tokens] = await Promise.all([
		listPage(event, CLIENTS, 'oauthClients', { org: organization.id, limit: PAGE_SIZE }, 'clients'),
		gql(event, REGISTRATION_TOKENS, { org: organization.id }).catch(rethrowAccess),
	]);
	return {
		registrationTokens: tokens.registrationTokens,
		registrationEndpoint: `${event.url.origin}/oauth/register`,
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

	/** An initial access token (RFC 7591), with which an app registers its own client here. */
	createToken: async (event) => {
		const organizationId = requireOrgAdmin(event);
		const form = await event.request.formData();
		const values = {
			name: formText(form, 'name').trim(),
			scopes: formText(form, 'scopes'),
			public: form.get('kind') === 'public',
		};
		let result: ResultOf<typeof CREATE_REGISTRATION_TOKEN>['createRegistrationToken'];
		try {
			({ createRegistrationToken: result } = await gql(event, CREATE_REGISTRATION_TOKEN, {
				input: {
					organizationId,
					name: values.name,
					scopes: values.scopes.split(/\s+/).filter(Boolean),
					public: values.public,
				},
			}));
		} catch (err) {
			rethrowAccess(err);
		}
		if (result.__typename === 'UserError')
			return userErrorFailure(result, { action: 'createToken' as const, tokenValues: values }, TOKEN_LABELS);
		event.setHeaders({ 'cache-control': 'no-store' });
		return { action: 'createToken' as const, createdToken: { name: result.name, token: result.token ?? '' } };
	},

	deleteToken: async (event) => {
		requireOrgAdmin(event);
		const id = formText(await event.request.formData(), 'id');
		let result: ResultOf<typeof DELETE_REGISTRATION_TOKEN>['deleteRegistrationToken'];
		try {
			({ deleteRegistrationToken: result } = await gql(event, DELETE_REGISTRATION_TOKEN, { id }));
		} catch (err) {
			rethrowAccess(err);
		}
		if (result.__typename === 'UserError') return userErrorFailure(result, { action: 'deleteToken' as const });
		return { action: 'deleteToken' as const, tokenDeleted: true };
	},
};
