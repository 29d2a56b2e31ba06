import { fail, redirect, type RequestEvent } from '@sveltejs/kit';
import { refused, userErrorStatus } from '#lib/server/errors.ts';
import { fieldErrors, type FieldErrors, type FieldLabels } from '#lib/field-errors.ts';
import { gql, type UserError } from '#lib/server/graphql.ts';
import { clearSessionCookie, setSessionCookie } from '#lib/server/session.ts';
import { twoFactorActions, twoFactorData } from './two-factor.server.ts';
import type { Actions, PageServerLoad } from './$types.js';

const ME = /* GraphQL */ `
	query Me {
		me { id email emailVerified pendingEmail }
		mySessions { id createdAt lastUsedAt expiresAt ip userAgent organization { id name } current }
	}
`;

const REVOKE_SESSION = /* GraphQL */ `
	mutation RevokeSession($id: ID!) {
		revokeSession(id: $id) {
			__typename
			... on RevokedSession { id current }
			... on UserError { code message }
		}
	}
`;

const REVOKE_OTHER_SESSIONS = /* GraphQL */ `
	mutation RevokeOtherSessions {
		revokeOtherSessions
	}
`;

const REQUEST_VERIFICATION = /* GraphQL */ `
	mutation RequestEmailVerification {
		requestEmailVerification {
			__typename
			... on VerificationSent { email }
			... on UserError { code message }
		}
	}
`;

const UPDATE_ME = /* GraphQL */ `
	mutation UpdateMe($input: UpdateMeInput!) {
		updateMe(input: $input) {
			__typename
			... on UpdateMePayload { user { email pendingEmail } login { token expiresAt } }
			... on UserError { code message details { path message } }
		}
	}
`;

interface Me {
	id: string;
	email: string;
	emailVerified: boolean;
	pendingEmail: string | null;
}

export interface Session {
	id: string;
	createdAt: string;
	lastUsedAt: string;
	expiresAt: string;
	ip: string | null;
	userAgent: string | null;
	organization: { id: string; name: string } | null;
	current: boolean;
}

type RevokeSessionResult = { __typename: 'RevokedSession'; id: string; current: boolean } | UserError;

type VerificationResult = { __typename: 'VerificationSent'; email: string } | UserError;
type UpdateResult =
	| { __typename: 'UpdateMePayload'; user: { email: string; pendingEmail: string | null }; login: { token: string; expiresAt: string } | null }
	| UserError;

const RATE_LIMITED = 'Too many attempts. Please wait a while and try again.';

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: signed out goes to sign-in.
	await event.parent();
	const [{ me, mySessions }, twoFactor] = await Promise.all([gql<{ me: Me; mySessions: Session[] }>(event, ME), twoFactorData(event)]);
	return { me, sessions: mySessions, twoFactor };
};

const field = (form: FormData, name: string) => {
	const value = form.get(name);
	return typeof value === 'string' ? value : '';
};

async function updateMe(event: RequestEvent, input: Record<string, string>): Promise<UpdateResult> {
	const { updateMe: result } = await gql<{ updateMe: UpdateResult }>(event, UPDATE_ME, { input });
	return result;
}

/** Each form's labels, by the GraphQL name of its fields: the fields a problem is shown beside. */
const EMAIL_LABELS: FieldLabels = { email: 'New e-mail address', currentPassword: 'Current password' };
const PASSWORD_LABELS: FieldLabels = { currentPassword: 'Current password', password: 'New password' };

/**
 * A refused change as the form shows it: a wrong current password (invalid_credentials) and an address another
 * account uses (conflict) carry no field, but are that field's problem; field problems come with a message pointing
 * at them.
 */
function changeFailure<A extends string, T extends object>(action: A, result: UserError, data: T, labels: FieldLabels) {
	const errors: FieldErrors = fieldErrors(result.details, labels);
	if (result.code === 'invalid_credentials') errors.currentPassword = ['is wrong'];
	if (result.code === 'conflict' && Object.hasOwn(labels, 'email')) errors.email = ['is used by another account'];
	const marked = Object.keys(errors).some((key) => key !== 'form');
	const message = marked ? 'Nothing was changed: correct the fields marked below.' : result.message;
	return fail(userErrorStatus(result), { action, ...data, message, errors });
}

export const actions: Actions = {
	...twoFactorActions,

	sendVerification: async (event) => {
		let result: VerificationResult;
		try {
			({ requestEmailVerification: result } = await gql<{ requestEmailVerification: VerificationResult }>(event, REQUEST_VERIFICATION));
		} catch (err) {
			return refused(err, { action: 'sendVerification' as const }, { rate_limited: 'Too many verification mails were asked for. Please try again later.' });
		}
		if (result.__typename === 'UserError') return fail(userErrorStatus(result), { action: 'sendVerification' as const, message: result.message });
		return { action: 'sendVerification' as const, sentTo: result.email };
	},

	changeEmail: async (event) => {
		const form = await event.request.formData();
		const email = field(form, 'email').trim();
		const currentPassword = field(form, 'currentPassword');
		const values = { email };
		if (email.toLowerCase() === event.locals.user?.email.toLowerCase()) {
			return fail(400, { action: 'changeEmail' as const, values, message: 'Nothing was changed: correct the fields marked below.', errors: { email: ['is already your address'] } as FieldErrors });
		}
		let result: UpdateResult;
		try {
			result = await updateMe(event, { email, currentPassword });
		} catch (err) {
			return refused(err, { action: 'changeEmail' as const, values, errors: {} as FieldErrors }, { rate_limited: RATE_LIMITED });
		}
		if (result.__typename === 'UserError') return changeFailure('changeEmail', result, { values }, EMAIL_LABELS);
		return { action: 'changeEmail' as const, pendingEmail: result.user.pendingEmail ?? email };
	},

	/** Asking for the current address again withdraws the pending change: its link stops working. */
	cancelEmailChange: async (event) => {
		const form = await event.request.formData();
		const pendingEmail = field(form, 'pendingEmail');
		let result: UpdateResult;
		try {
			result = await updateMe(event, { email: event.locals.user?.email ?? '' });
		} catch (err) {
			return refused(err, { action: 'cancelEmailChange' as const }, { rate_limited: RATE_LIMITED });
		}
		if (result.__typename === 'UserError') return fail(userErrorStatus(result), { action: 'cancelEmailChange' as const, message: result.message });
		return { action: 'cancelEmailChange' as const, withdrawn: pendingEmail || 'the new address' };
	},

	/** Ends one of the person's sessions; ending this browser's own signs out, as /logout does. */
	revokeSession: async (event) => {
		const form = await event.request.formData();
		const id = field(form, 'id');
		if (!id) return fail(400, { action: 'revokeSession' as const, message: 'Choose the session to sign out.' });
		let result: RevokeSessionResult;
		try {
			({ revokeSession: result } = await gql<{ revokeSession: RevokeSessionResult }>(event, REVOKE_SESSION, { id }));
		} catch (err) {
			return refused(err, { action: 'revokeSession' as const }, { not_found: 'That session has already ended.' });
		}
		if (result.__typename === 'UserError') return fail(userErrorStatus(result), { action: 'revokeSession' as const, message: result.message });
		if (result.current) {
			clearSessionCookie(event);
			redirect(303, '/login');
		}
		return { action: 'revokeSession' as const, signedOut: result.id };
	},

	/** Signs out everywhere else: every session of the person but this browser's ends. */
	revokeOtherSessions: async (event) => {
		let ended: number;
		try {
			({ revokeOtherSessions: ended } = await gql<{ revokeOtherSessions: number }>(event, REVOKE_OTHER_SESSIONS));
		} catch (err) {
			return refused(err, { action: 'revokeOtherSessions' as const });
		}
		return { action: 'revokeOtherSessions' as const, ended };
	},

	changePassword: async (event) => {
		const form = await event.request.formData();
		const currentPassword = field(form, 'currentPassword');
		const password = field(form, 'password');
		if (password !== field(form, 'passwordRepeat')) {
			return fail(400, { action: 'changePassword' as const, message: 'Nothing was changed: correct the fields marked below.', errors: { passwordRepeat: ['does not match the new password'] } as FieldErrors });
		}
		let result: UpdateResult;
		try {
			result = await updateMe(event, { currentPassword, password });
		} catch (err) {
			return refused(err, { action: 'changePassword' as const, errors: {} as FieldErrors }, { rate_limited: RATE_LIMITED });
		}
		if (result.__typename === 'UserError') return changeFailure('changePassword', result, {}, PASSWORD_LABELS);
		// The new password ended every session, this browser's too: it carries on with the one the change issued.
		if (result.login) setSessionCookie(event, result.login.token, result.login.expiresAt);
		return { action: 'changePassword' as const, passwordChanged: true };
	}
};
