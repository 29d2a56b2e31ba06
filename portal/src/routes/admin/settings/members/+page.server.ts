import { fail } from '@sveltejs/kit';
import { userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import { field, fieldErrors, refused, type FieldErrors, requireOrgAdmin, type Role } from '../settings.server.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';

const PAGE_SIZE = 50;
const INVITATION_PAGE = 100;
/** How far back pending invitations are looked for: they live 7 days, so this is far beyond any real list. */
const INVITATION_PAGES = 10;

const ROLES = ['owner', 'admin', 'member'] as const satisfies readonly Role[];

const MEMBERS = graphql(`
	query Members($org: String!, $limit: Int, $cursor: String) {
		members(organizationId: $org, limit: $limit, cursor: $cursor) {
			items {
				id
				userId
				role
				createdAt
				mfaEnabled
				managed
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

const INVITATIONS = graphql(`
	query Invitations($org: String!, $limit: Int, $cursor: String) {
		invitations(organizationId: $org, limit: $limit, cursor: $cursor) {
			items {
				id
				email
				role
				status
				expiresAt
				createdAt
			}
			nextCursor
		}
	}
`);

const CHANGE_ROLE = graphql(
	`
		mutation ChangeMemberRole($org: String!, $userId: String!, $role: Role!) {
			changeMemberRole(organizationId: $org, userId: $userId, role: $role) {
				__typename
				... on Membership {
					role
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

const REMOVE_MEMBER = graphql(
	`
		mutation RemoveMember($org: String!, $userId: String!) {
			removeMember(organizationId: $org, userId: $userId) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/** An invitation as created or sent again: its accept link, in this answer only. */
const CREATED_INVITATION = graphql(`
	fragment CreatedInvitationFields on CreatedInvitation {
		acceptUrl
		invitation {
			id
			email
			role
			expiresAt
		}
	}
`);

const CREATE_INVITATION = graphql(
	`
		mutation CreateInvitation($org: String!, $input: CreateInvitationInput!) {
			createInvitation(organizationId: $org, input: $input) {
				__typename
				...CreatedInvitationFields
				...UserErrorFields
			}
		}
	`,
	[CREATED_INVITATION, USER_ERROR_FIELDS],
);

const RESEND_INVITATION = graphql(
	`
		mutation ResendInvitation($org: String!, $id: String!) {
			resendInvitation(organizationId: $org, invitationId: $id) {
				__typename
				...CreatedInvitationFields
				...UserErrorFields
			}
		}
	`,
	[CREATED_INVITATION, USER_ERROR_FIELDS],
);

const SEND_PASSWORD_RESET = graphql(
	`
		mutation SendPasswordReset($userId: ID!) {
			sendPasswordReset(userId: $userId) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const RESET_MEMBER_MFA = graphql(
	`
		mutation ResetMemberMfa($org: ID!, $userId: ID!) {
			resetMemberMfa(organizationId: $org, userId: $userId) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const REVOKE_INVITATION = graphql(
	`
		mutation RevokeInvitation($org: String!, $id: String!) {
			revokeInvitation(organizationId: $org, invitationId: $id) {
				__typename
				... on Invitation {
					id
					email
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

type Invitation = ResultOf<typeof INVITATIONS>['invitations']['items'][number];

/**
 * The pending invitations, newest first. The service lists every invitation oldest first, so the pending ones
 * (the newest) are at the end: the pages are read through, as far as INVITATION_PAGES.
 */
async function pendingInvitations(event: RequestEvent, organizationId: string): Promise<Invitation[]> {
	const pending: Invitation[] = [];
	let cursor: string | null = null;
	for (let i = 0; i < INVITATION_PAGES; i++) {
		const { invitations: page }: ResultOf<typeof INVITATIONS> = await gql(event, INVITATIONS, {
			org: organizationId,
			limit: INVITATION_PAGE,
			cursor,
		});
		pending.push(...page.items.filter((inv) => inv.status === 'pending'));
		cursor = page.nextCursor;
		if (!cursor) break;
	}
	return pending.reverse();
}

/** The roles the caller may give: only an owner makes owners. */
const grantable = (role: Role | null) => ROLES.filter((r) => r !== 'owner' || role === 'owner');

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not this query's error.
	const { organization, role } = await event.parent();
	const page = await listPage(event, MEMBERS, 'members', { org: organization.id, limit: PAGE_SIZE }, 'members');
	const removing = event.url.searchParams.get('remove');
	return {
		members: page.items,
		cursor: page.cursor,
		nextCursor: page.nextCursor,
		invitations: await pendingInvitations(event, organization.id),
		// The member whose removal is to be confirmed: one of this page's, never the caller.
		removing: page.items.find((m) => m.userId === removing && m.userId !== event.locals.user?.id) ?? null,
		// The member whose second factors an owner is to confirm resetting: one of this page's who has one, and whose
		// account the organization manages (a platform admin helps anyone).
		resettingMfa:
			role === 'owner'
				? (page.items.find(
						(m) =>
							m.userId === event.url.searchParams.get('reset_mfa') &&
							m.mfaEnabled &&
							(m.managed || event.locals.platformAdmin),
					) ?? null)
				: null,
		me: event.locals.user?.id ?? null,
		// Platform admins may mail anyone a reset link (nobody sets another person's password).
		platformAdmin: event.locals.platformAdmin,
		role,
		grantable: grantable(role),
	};
};

/** The role a form sent, if it is one. */
const roleOf = (form: FormData) => ROLES.find((r) => r === field(form, 'role')) ?? null;

export const actions: Actions = {
	changeRole: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const userId = field(form, 'userId');
		const role = roleOf(form);
		if (!userId || !role)
			return fail(400, {
				action: 'changeRole' as const,
				userId,
				message: 'Choose one of the roles owner, admin or member.',
			});
		let result: ResultOf<typeof CHANGE_ROLE>['changeMemberRole'];
		try {
			({ changeMemberRole: result } = await gql(event, CHANGE_ROLE, {
				org: organizationId,
				userId,
				role,
			}));
		} catch (err) {
			return refused(err, { action: 'changeRole' as const, userId });
		}
		if (result.__typename === 'UserError')
			return fail(400, { action: 'changeRole' as const, userId, message: result.message });
		return { action: 'changeRole' as const, userId, changed: { name: result.user.name, role: result.role } };
	},

	remove: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const userId = field(form, 'userId');
		if (!userId || form.get('confirm') !== 'yes') {
			return fail(400, { action: 'remove' as const, userId, message: 'Confirm which member is to be removed.' });
		}
		const name = field(form, 'name');
		let result: ResultOf<typeof REMOVE_MEMBER>['removeMember'];
		try {
			({ removeMember: result } = await gql(event, REMOVE_MEMBER, {
				org: organizationId,
				userId,
			}));
		} catch (err) {
			return refused(err, { action: 'remove' as const, userId });
		}
		if (result.__typename === 'UserError')
			return fail(400, { action: 'remove' as const, userId, message: result.message });
		return { action: 'remove' as const, userId, removed: { name: name || 'The member' } };
	},

	invite: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const values = { email: field(form, 'email'), role: field(form, 'role') };
		const role = roleOf(form);
		if (!role) {
			return fail(400, {
				action: 'invite' as const,
				values,
				message: 'The invitation was not sent: correct the fields marked below.',
				errors: { role: ['must be owner, admin or member'] } as FieldErrors,
			});
		}
		let result: ResultOf<typeof CREATE_INVITATION>['createInvitation'];
		try {
			({ createInvitation: result } = await gql(event, CREATE_INVITATION, {
				org: organizationId,
				input: { email: values.email, role },
			}));
		} catch (err) {
			return refused(err, { action: 'invite' as const, values, errors: {} as FieldErrors });
		}
		if (result.__typename === 'UserError') {
			const errors = fieldErrors(result.details, { email: 'Email', role: 'Role' });
			const message =
				result.code === 'invalid_request'
					? 'The invitation was not sent: correct the fields marked below.'
					: result.message;
			return fail(400, { action: 'invite' as const, values, message, errors });
		}
		// The accept link is in this response only: no cache may keep it.
		event.setHeaders({ 'cache-control': 'no-store' });
		return { action: 'invite' as const, invited: { ...result.invitation, acceptUrl: result.acceptUrl } };
	},

	resendInvitation: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const id = field(await event.request.formData(), 'invitationId');
		if (!id) return fail(400, { action: 'resendInvitation' as const, message: 'Choose the invitation to send again.' });
		let result: ResultOf<typeof RESEND_INVITATION>['resendInvitation'];
		try {
			({ resendInvitation: result } = await gql(event, RESEND_INVITATION, {
				org: organizationId,
				id,
			}));
		} catch (err) {
			return refused(err, { action: 'resendInvitation' as const }, { not_found: 'That invitation no longer exists.' });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'resendInvitation' as const, message: result.message });
		// The new accept link is in this response only: no cache may keep it.
		event.setHeaders({ 'cache-control': 'no-store' });
		return { action: 'resendInvitation' as const, resent: { ...result.invitation, acceptUrl: result.acceptUrl } };
	},

	sendPasswordReset: async (event) => {
		requireOrgAdmin(event);
		const form = await event.request.formData();
		const userId = field(form, 'userId');
		if (!userId)
			return fail(400, { action: 'sendPasswordReset' as const, userId, message: 'Choose whom to mail a reset link.' });
		let result: ResultOf<typeof SEND_PASSWORD_RESET>['sendPasswordReset'];
		try {
			({ sendPasswordReset: result } = await gql(event, SEND_PASSWORD_RESET, {
				userId,
			}));
		} catch (err) {
			return refused(
				err,
				{ action: 'sendPasswordReset' as const, userId },
				{ forbidden: 'Only platform administrators mail people reset links.' },
			);
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'sendPasswordReset' as const, userId, message: result.message });
		return { action: 'sendPasswordReset' as const, userId, resetSent: { email: field(form, 'email') || 'the member' } };
	},

	/** An owner resets a member's second factors (a lost phone): the member is mailed, and signs in with the password. */
	resetMfa: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const form = await event.request.formData();
		const userId = field(form, 'userId');
		if (!userId || form.get('confirm') !== 'yes')
			return fail(400, {
				action: 'resetMfa' as const,
				userId,
				message: 'Confirm whose two-factor authentication is to be reset.',
			});
		let result: ResultOf<typeof RESET_MEMBER_MFA>['resetMemberMfa'];
		try {
			({ resetMemberMfa: result } = await gql(event, RESET_MEMBER_MFA, {
				org: organizationId,
				userId,
			}));
		} catch (err) {
			return refused(
				err,
				{ action: 'resetMfa' as const, userId },
				{ forbidden: "Only owners reset a member's two-factor authentication." },
			);
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'resetMfa' as const, userId, message: result.message });
		return { action: 'resetMfa' as const, userId, mfaReset: { name: field(form, 'name') || 'The member' } };
	},

	revokeInvitation: async (event) => {
		const { organizationId } = requireOrgAdmin(event);
		const id = field(await event.request.formData(), 'invitationId');
		if (!id) return fail(400, { action: 'revokeInvitation' as const, message: 'Choose the invitation to revoke.' });
		let result: ResultOf<typeof REVOKE_INVITATION>['revokeInvitation'];
		try {
			({ revokeInvitation: result } = await gql(event, REVOKE_INVITATION, {
				org: organizationId,
				id,
			}));
		} catch (err) {
			return refused(err, { action: 'revokeInvitation' as const });
		}
		if (result.__typename === 'UserError')
			return fail(400, { action: 'revokeInvitation' as const, message: result.message });
		return { action: 'revokeInvitation' as const, revoked: { email: result.email } };
	},
};
