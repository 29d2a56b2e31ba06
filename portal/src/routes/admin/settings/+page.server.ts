import { fail } from '@sveltejs/kit';
import { errorPage, userErrorFailure } from '#lib/server/errors.ts';
import { gql, graphql, type ResultOf, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import { RENAME_ORGANIZATION } from '#lib/server/organizations.ts';
import { field, refused, requireOrgAdmin } from './settings.server.ts';
import type { Actions, PageServerLoad } from './$types.js';

const ORGANIZATION = graphql(`
	query Organization($id: ID!) {
		organization(id: $id) {
			id
			name
			createdAt
			requireMfa
			allowMetadataClients
		}
	}
`);

const MEMBERS = graphql(`
	query Members($org: String!) {
		members(organizationId: $org, limit: 100) {
			items {
				userId
				role
				user {
					id
					name
					email
				}
			}
			nextCursor
		}
	}
`);

const REQUIRE_MFA = graphql(
	`
		mutation RequireMfa($id: ID!, $requireMfa: Boolean!) {
			updateOrganization(id: $id, input: { requireMfa: $requireMfa }) {
				__typename
				... on Organization {
					requireMfa
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const ALLOW_METADATA_CLIENTS = graphql(
	`
		mutation AllowMetadataClients($id: ID!, $allow: Boolean!) {
			updateOrganization(id: $id, input: { allowMetadataClients: $allow }) {
				__typename
				... on Organization {
					allowMetadataClients
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const TRANSFER = graphql(
	`
		mutation TransferOwnership($org: String!, $userId: String!, $stepDown: Boolean) {
			transferOwnership(organizationId: $org, userId: $userId, stepDown: $stepDown) {
				__typename
				... on Membership {
					user {
						name
						email
					}
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/**
 * The organization itself: its id (for the API and the CLI), its name, and for its owners the transfer of
 * ownership to another member (docs/architecture.md#tenancy-and-roles).
 */
export const load: PageServerLoad = async (event) => {
	const { organization, role } = await event.parent();
	try {
		const [{ organization: org }, members] = await Promise.all([
			gql(event, ORGANIZATION, {
				id: organization.id,
			}),
			role === 'owner'
				? gql(event, MEMBERS, {
						org: organization.id,
					}).then((d) => d.members)
				: null,
		]);
		const self = event.locals.user?.id;
		return {
			organization: org,
			owner: role === 'owner',
			// Who could become owner: every other member; the first 100, as the members page lists them.
			heirs: members?.items.filter((m) => m.userId !== self) ?? [],
			moreMembers: members?.nextCursor != null,
		};
	} catch (err) {
		errorPage(err);
	}
};

export const actions: Actions = {
	rename: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const values = { name: field(await event.request.formData(), 'name') };
		let result: ResultOf<typeof RENAME_ORGANIZATION>['updateOrganization'];
		try {
			({ updateOrganization: result } = await gql(event, RENAME_ORGANIZATION, {
				id: organizationId,
				...values,
			}));
		} catch (err) {
			return refused(err, { action: 'rename' as const, values, problems: [] as string[] });
		}
		if (result.__typename === 'UserError')
			return userErrorFailure(result, { action: 'rename' as const, values }, { name: 'Organization name' });
		return { action: 'rename' as const, done: `The organization is now called ${result.name}.` };
	},

	/** Owners switch the organization's second-factor policy; the service refuses an owner without a factor of their own. */
	requireMfa: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const requireMfa = (await event.request.formData()).get('requireMfa') === 'on';
		let result: ResultOf<typeof REQUIRE_MFA>['updateOrganization'];
		try {
			({ updateOrganization: result } = await gql(event, REQUIRE_MFA, {
				id: organizationId,
				requireMfa,
			}));
		} catch (err) {
			return refused(
				err,
				{ action: 'requireMfa' as const, problems: [] as string[] },
				{ forbidden: 'Only owners of the organization can change this.' },
			);
		}
		if (result.__typename === 'UserError')
			return userErrorFailure(
				result,
				{ action: 'requireMfa' as const },
				{ requireMfa: 'Require two-factor authentication' },
			);
		return {
			action: 'requireMfa' as const,
			done: result.requireMfa
				? 'Two-factor authentication is now required: members without it set it up at their next step here.'
				: 'Two-factor authentication is no longer required.',
		};
	},

	/** Admins choose whether applications known only by their metadata document may sign members in. */
	metadataClients: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const allow = (await event.request.formData()).get('allowMetadataClients') === 'on';
		let result: ResultOf<typeof ALLOW_METADATA_CLIENTS>['updateOrganization'];
		try {
			({ updateOrganization: result } = await gql(event, ALLOW_METADATA_CLIENTS, { id: organizationId, allow }));
		} catch (err) {
			return refused(err, { action: 'metadataClients' as const, problems: [] as string[] });
		}
		if (result.__typename === 'UserError')
			return userErrorFailure(
				result,
				{ action: 'metadataClients' as const },
				{ allowMetadataClients: 'Allow unregistered applications' },
			);
		return {
			action: 'metadataClients' as const,
			done: result.allowMetadataClients
				? 'Applications that describe themselves by a metadata document may now sign members in, after each one asks.'
				: 'Only applications registered here may sign members in; what the others were granted has ended.',
		};
	},

	transfer: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const values = { userId: field(form, 'userId'), stepDown: form.get('stepDown') === 'yes' };
		if (!values.userId)
			return fail(400, {
				action: 'transfer' as const,
				values,
				message: 'Choose the member who becomes owner.',
				problems: [],
			});
		if (form.get('confirm') !== 'yes')
			return fail(400, {
				action: 'transfer' as const,
				values,
				message: 'Tick the box to confirm the transfer.',
				problems: [],
			});
		let result: ResultOf<typeof TRANSFER>['transferOwnership'];
		try {
			({ transferOwnership: result } = await gql(event, TRANSFER, {
				org: organizationId,
				...values,
			}));
		} catch (err) {
			return refused(err, { action: 'transfer' as const, values, problems: [] as string[] });
		}
		if (result.__typename === 'UserError')
			return userErrorFailure(result, { action: 'transfer' as const, values }, { userId: 'New owner' });
		const who = result.user.name || result.user.email;
		return {
			action: 'transfer' as const,
			done: values.stepDown ? `${who} is now an owner, and you are an admin.` : `${who} is now an owner, as you are.`,
		};
	},
};
