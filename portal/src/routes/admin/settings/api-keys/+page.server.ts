import { fail } from '@sveltejs/kit';
import { gql, graphql, GraphQLRequestError, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import { field, fieldErrors, refused, type FieldErrors, requireOrgAdmin } from '../settings.server.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';

const PAGE_SIZE = 50;

/** The roles a key may have: an owner's power is never handed to a key. */
const KEY_ROLES = ['admin', 'member'] as const;

const API_KEYS = graphql(`
	query ApiKeys($org: String, $limit: Int, $cursor: String) {
		apiKeys(organizationId: $org, limit: $limit, cursor: $cursor) {
			items {
				id
				name
				keyPrefix
				role
				createdById
				createdAt
				lastUsedAt
			}
			nextCursor
		}
	}
`);

const USER = graphql(`
	query KeyCreator($id: ID!) {
		user(id: $id) {
			id
			name
			email
		}
	}
`);

const CREATE_API_KEY = graphql(
	`
		mutation CreateApiKey($input: CreateApiKeyInput!) {
			createApiKey(input: $input) {
				__typename
				... on CreatedApiKey {
					key
					secret
					apiKey {
						id
						name
						role
					}
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const REVOKE_API_KEY = graphql(
	`
		mutation RevokeApiKey($id: ID!) {
			revokeApiKey(id: $id) {
				__typename
				... on ApiKey {
					id
					name
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

type ApiKey = ResultOf<typeof API_KEYS>['apiKeys']['items'][number];
type Person = ResultOf<typeof USER>['user'];

/**
 * The people who made `keys`, by id. A key is revoked when its creator leaves (docs/architecture.md#tenancy-and-roles),
 * so each is a member the admin may see; one that cannot be read (deleted meanwhile) is simply not named.
 */
async function creatorsOf(event: RequestEvent, keys: ApiKey[]): Promise<Record<string, Person>> {
	const ids = [...new Set(keys.map((k) => k.createdById).filter((id): id is string => id !== null))];
	const people = await Promise.all(
		ids.map((id) =>
			gql(event, USER, { id }).then(
				({ user }) => user,
				(err) => {
					if (err instanceof GraphQLRequestError && err.code === 'not_found') return null;
					throw err;
				},
			),
		),
	);
	return Object.fromEntries(people.filter((p): p is Person => p !== null).map((p) => [p.id, p]));
}

/** How many pages of keys an action looks through for the one it is about: far beyond any real organization's. */
const KEY_PAGES = 10;

/**
 * Whether key `id` is one of organization `organizationId`'s. Platform admins may revoke any organization's keys
 * through the API, but this page is about the current organization only, so another one's is not found here.
 */
async function ownsKey(event: RequestEvent, organizationId: string, id: string): Promise<boolean> {
	let cursor: string | null = null;
	for (let i = 0; i < KEY_PAGES; i++) {
		const { apiKeys: page }: ResultOf<typeof API_KEYS> = await gql(event, API_KEYS, {
			org: organizationId,
			limit: 100,
			cursor,
		});
		if (page.items.some((k) => k.id === id)) return true;
		cursor = page.nextCursor;
		if (!cursor) return false;
	}
	return false;
}

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not this query's error.
	const { organization } = await event.parent();
	const page = await listPage(event, API_KEYS, 'apiKeys', { org: organization.id, limit: PAGE_SIZE }, 'API keys');
	const revoking = event.url.searchParams.get('revoke');
	return {
		keys: page.items,
		creators: await creatorsOf(event, page.items),
		cursor: page.cursor,
		nextCursor: page.nextCursor,
		// The key whose revocation is to be confirmed: one of this page's, else none.
		revoking: page.items.find((k) => k.id === revoking) ?? null,
		roles: KEY_ROLES,
	};
};

export const actions: Actions = {
	create: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const values = { name: field(form, 'name'), role: field(form, 'role') };
		const role = KEY_ROLES.find((r) => r === values.role);
		if (!role) {
			return fail(400, {
				action: 'create' as const,
				values,
				message: 'The key was not created: correct the fields marked below.',
				errors: { role: ['must be admin or member'] } as FieldErrors,
			});
		}

		let result: ResultOf<typeof CREATE_API_KEY>['createApiKey'];
		try {
			({ createApiKey: result } = await gql(event, CREATE_API_KEY, {
				input: { name: values.name, role, organizationId },
			}));
		} catch (err) {
			return refused(err, { action: 'create' as const, values, errors: {} as FieldErrors });
		}
		if (result.__typename === 'UserError') {
			const errors = fieldErrors(result.details, { name: 'Name', role: 'Role' });
			const message =
				result.code === 'invalid_request'
					? 'The key was not created: correct the fields marked below.'
					: result.message;
			return fail(400, { action: 'create' as const, values, message, errors });
		}

		// The key and the secret are in this response only: no cache may keep it.
		event.setHeaders({ 'cache-control': 'no-store' });
		return {
			action: 'create' as const,
			created: {
				id: result.apiKey.id,
				name: result.apiKey.name,
				role: result.apiKey.role,
				key: result.key,
				secret: result.secret,
			},
		};
	},

	revoke: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const id = field(form, 'id');
		if (!id || form.get('confirm') !== 'yes') {
			return fail(400, { action: 'revoke' as const, message: 'Confirm which key is to be revoked.' });
		}
		let result: ResultOf<typeof REVOKE_API_KEY>['revokeApiKey'];
		try {
			if (!(await ownsKey(event, organizationId, id)))
				return fail(404, { action: 'revoke' as const, message: 'No such API key in this organization.' });
			({ revokeApiKey: result } = await gql(event, REVOKE_API_KEY, { id }));
		} catch (err) {
			return refused(err, { action: 'revoke' as const });
		}
		if (result.__typename === 'UserError') return fail(400, { action: 'revoke' as const, message: result.message });
		return { action: 'revoke' as const, revoked: { id: result.id, name: result.name } };
	},
};
