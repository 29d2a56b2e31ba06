import { fail } from '@sveltejs/kit';
import { userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import {
	actsAsOwner,
	field,
	fieldErrors,
	refused,
	type FieldErrors,
	requireOrgAdmin,
	type Role,
	SEAT_SUBSCRIPTIONS,
	seatChoice,
} from '../settings.server.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';

const TOKEN_FIELDS = graphql(`
	fragment ScimTokenFields on ScimToken {
		id
		name
		createdAt
		lastUsedAt
		revokedAt
	}
`);

const MAPPING_FIELDS = graphql(`
	fragment GroupMappingFields on DirectoryGroupMapping {
		id
		group
		role
		subscriptionId
		createdAt
	}
`);

const DIRECTORY = graphql(
	`
		query Directory($org: String!) {
			scimTokens(organizationId: $org) {
				...ScimTokenFields
			}
			directoryGroupMappings(organizationId: $org) {
				...GroupMappingFields
			}
			scimRequests(organizationId: $org) {
				id
				method
				path
				status
				scimType
				detail
				createdAt
			}
			...SeatSubscriptions
		}
	`,
	[TOKEN_FIELDS, MAPPING_FIELDS, SEAT_SUBSCRIPTIONS],
);

const TOKENS = graphql(
	`
		query ScimTokens($org: String!) {
			scimTokens(organizationId: $org) {
				...ScimTokenFields
			}
		}
	`,
	[TOKEN_FIELDS],
);

const MAPPINGS = graphql(
	`
		query DirectoryGroupMappings($org: String!) {
			directoryGroupMappings(organizationId: $org) {
				...GroupMappingFields
			}
		}
	`,
	[MAPPING_FIELDS],
);

const CREATE_TOKEN = graphql(
	`
		mutation CreateScimToken($name: String!, $org: String!) {
			createScimToken(name: $name, organizationId: $org) {
				__typename
				... on CreatedScimToken {
					token
					scimToken {
						id
						name
					}
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const REVOKE_TOKEN = graphql(`
	mutation RevokeScimToken($id: String!) {
		revokeScimToken(id: $id) {
			id
			name
		}
	}
`);

const CREATE_MAPPING = graphql(
	`
		mutation CreateDirectoryGroupMapping($input: CreateDirectoryGroupMappingInput!) {
			createDirectoryGroupMapping(input: $input) {
				__typename
				... on DirectoryGroupMapping {
					id
					group
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const DELETE_MAPPING = graphql(`
	mutation DeleteDirectoryGroupMapping($id: String!) {
		deleteDirectoryGroupMapping(id: $id)
	}
`);

type ScimToken = ResultOf<typeof TOKEN_FIELDS>;
type GroupMapping = ResultOf<typeof MAPPING_FIELDS>;
type Subscription = ResultOf<typeof SEAT_SUBSCRIPTIONS>['subscriptions']['items'][number];

const ROLES = ['member', 'admin', 'owner'] as const satisfies readonly Role[];

/**
 * What a mapping gives, as the form's one select sends it: `role:<role>` or `subscription:<id>`. One field rather
 * than two keeps the form working without script, where fields cannot be shown or hidden by the choice.
 */
function readGives(value: string): { role: Role } | { subscriptionId: string } | null {
	const [kind, ...rest] = value.split(':');
	const what = rest.join(':');
	const role = ROLES.find((r) => r === what);
	if (kind === 'role' && role) return { role };
	if (kind === 'subscription' && what) return { subscriptionId: what };
	return null;
}

/** The token a link or an action names, if it is the current organization's. */
async function findToken(event: RequestEvent, organizationId: string, id: string): Promise<ScimToken | null> {
	if (!id) return null;
	const { scimTokens } = await gql(event, TOKENS, { org: organizationId });
	return scimTokens.find((t) => t.id === id) ?? null;
}

/** The mapping a link or an action names, if it is the current organization's. */
async function findMapping(event: RequestEvent, organizationId: string, id: string): Promise<GroupMapping | null> {
	if (!id) return null;
	const { directoryGroupMappings } = await gql(event, MAPPINGS, { org: organizationId });
	return directoryGroupMappings.find((m) => m.id === id) ?? null;
}

/** What a mapping gives, in words: its role, or the seats of its subscription's product. */
function givesLabel(mapping: GroupMapping, subscriptions: Map<string, Subscription>): string {
	if (mapping.role) return `The ${mapping.role} role`;
	const subscription = mapping.subscriptionId ? subscriptions.get(mapping.subscriptionId) : undefined;
	return subscription ? `A seat of ${subscription.product.name}` : 'A seat of a subscription no longer listed';
}

/**
 * An organization's directory provisioning (docs/architecture.md#directory-provisioning): the SCIM tokens its
 * directory (Entra ID, Okta…) sends, which directory groups give a role or a subscription's seats, and the
 * directory's last requests, so that an admin can see why someone did not arrive.
 */
export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not these queries' errors.
	const { organization } = await event.parent();
	const data = await gql(event, DIRECTORY, { org: organization.id });
	const subscriptions = new Map(data.subscriptions.items.map((s) => [s.id, s]));
	const mappings = data.directoryGroupMappings.map((m) => ({ ...m, gives: givesLabel(m, subscriptions) }));
	const params = event.url.searchParams;
	// A directory decides who joins and with what role: only owners make and revoke its tokens; admins see them.
	const owner = actsAsOwner(event.locals);
	const revoking = owner ? (data.scimTokens.find((t) => t.id === params.get('revoke') && !t.revokedAt) ?? null) : null;
	const deleting = mappings.find((m) => m.id === params.get('delete')) ?? null;
	return {
		scimUrl: `${event.url.origin}/scim/v2`,
		canChangeTokens: owner,
		tokens: data.scimTokens,
		mappings,
		requests: data.scimRequests,
		subscriptions: data.subscriptions.items.map(seatChoice),
		// The confirmation a link opened: a token of ours still working, a mapping of ours; else none.
		revoking,
		deleting,
		// An owner's power is handed out only by owners: admins offer admin and member.
		roles: owner ? ROLES : ROLES.filter((r) => r !== 'owner'),
	};
};

/** The mapping form's fields, by their GraphQL names, with the labels the form shows: role and subscription are one select. */
const MAPPING_LABELS = { group: 'Directory group', role: 'Members get', subscriptionId: 'Members get' } as const;

export const actions: Actions = {
	createToken: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const values = { name: field(await event.request.formData(), 'name') };
		let result: ResultOf<typeof CREATE_TOKEN>['createScimToken'];
		try {
			({ createScimToken: result } = await gql(event, CREATE_TOKEN, {
				name: values.name,
				org: organizationId,
			}));
		} catch (err) {
			return refused(err, { action: 'createToken' as const, values, errors: {} as FieldErrors });
		}
		if (result.__typename === 'UserError') {
			const message =
				result.code === 'invalid_request'
					? 'The token was not created: correct the fields marked below.'
					: result.message;
			return fail(userErrorStatus(result), {
				action: 'createToken' as const,
				values,
				message,
				errors: fieldErrors(result.details, { name: 'Name' }),
			});
		}
		// The token is in this response only: no cache may keep it.
		event.setHeaders({ 'cache-control': 'no-store' });
		return {
			action: 'createToken' as const,
			created: { id: result.scimToken.id, name: result.scimToken.name, token: result.token },
		};
	},

	revokeToken: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const id = field(form, 'id');
		if (!id || form.get('confirm') !== 'yes')
			return fail(400, { action: 'revokeToken' as const, message: 'Confirm which token is to be revoked.' });
		try {
			// Platform admins may revoke any organization's token through the API; this page is about the current one.
			const token = await findToken(event, organizationId, id);
			if (!token)
				return fail(404, { action: 'revokeToken' as const, message: 'No such directory token in this organization.' });
			await gql(event, REVOKE_TOKEN, { id: token.id });
			return { action: 'revokeToken' as const, revoked: { id: token.id, name: token.name } };
		} catch (err) {
			return refused(err, { action: 'revokeToken' as const });
		}
	},

	createMapping: async (event) => {
		const { organizationId, role } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const values = { group: field(form, 'group'), gives: field(form, 'gives') };
		const gives = readGives(values.gives);
		const failed = 'The mapping was not added: correct the fields marked below.';
		if (!gives)
			return fail(400, {
				action: 'createMapping' as const,
				values,
				message: failed,
				errors: { gives: ['must be a role or a subscription'] } as FieldErrors,
			});
		if ('role' in gives && gives.role === 'owner' && role !== 'owner' && !event.locals.platformAdmin) {
			return fail(403, {
				action: 'createMapping' as const,
				values,
				message: 'Only owners can make a group give the owner role.',
				errors: {} as FieldErrors,
			});
		}
		let result: ResultOf<typeof CREATE_MAPPING>['createDirectoryGroupMapping'];
		try {
			({ createDirectoryGroupMapping: result } = await gql(event, CREATE_MAPPING, {
				input: { group: values.group, organizationId, ...gives },
			}));
		} catch (err) {
			return refused(err, { action: 'createMapping' as const, values, errors: {} as FieldErrors });
		}
		if (result.__typename === 'UserError') {
			const byField = fieldErrors(result.details, MAPPING_LABELS);
			// The role and the subscription are the one select of the form.
			const errors: FieldErrors = { ...byField, gives: [...(byField.role ?? []), ...(byField.subscriptionId ?? [])] };
			const message = result.code === 'invalid_request' && result.details.length ? failed : result.message;
			return fail(userErrorStatus(result), { action: 'createMapping' as const, values, message, errors });
		}
		return { action: 'createMapping' as const, added: { id: result.id, group: result.group } };
	},

	deleteMapping: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const id = field(form, 'id');
		if (!id || form.get('confirm') !== 'yes')
			return fail(400, { action: 'deleteMapping' as const, message: 'Confirm which mapping is to be deleted.' });
		try {
			const mapping = await findMapping(event, organizationId, id);
			if (!mapping)
				return fail(404, { action: 'deleteMapping' as const, message: 'No such group mapping in this organization.' });
			await gql(event, DELETE_MAPPING, { id: mapping.id });
			return { action: 'deleteMapping' as const, deleted: { id: mapping.id, group: mapping.group } };
		} catch (err) {
			return refused(err, { action: 'deleteMapping' as const });
		}
	},
};
