import { fail, redirect, type RequestEvent } from '@sveltejs/kit';
import { reasonMessage, refused, userErrorStatus } from '#lib/server/errors.ts';
import { fieldErrors, type FieldErrors, type FieldLabels } from '#lib/field-errors.ts';
import {
	gql,
	graphql,
	USER_ERROR_FIELDS,
	type ResultOf,
	type UserError,
	type VariablesOf,
} from '#lib/server/graphql.ts';
import { clearSessionCookie, setSessionCookie } from '#lib/server/session.ts';
import { twoFactorActions, twoFactorData } from './two-factor.server.ts';
import type { Actions, PageServerLoad } from './$types.js';

const ME = graphql(`
	query Me {
		me {
			id
			email
			emailVerified
			pendingEmail
		}
		mySessions {
			id
			createdAt
			lastUsedAt
			expiresAt
			ip
			userAgent
			organization {
				id
				name
			}
			current
		}
	}
`);

const CONNECTED_SIGN_INS = graphql(`
	query ConnectedSignIns {
		mySsoIdentities {
			id
			connectionId
			name
			type
			createdAt
			lastSignInAt
		}
		socialProviders {
			id
			name
			type
		}
	}
`);

const UNLINK_SSO_IDENTITY = graphql(`
	mutation UnlinkSsoIdentity($id: String!) {
		unlinkSsoIdentity(id: $id)
	}
`);

const REVOKE_SESSION = graphql(
	`
		mutation RevokeSession($id: ID!) {
			revokeSession(id: $id) {
				__typename
				... on RevokedSession {
					id
					current
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const REVOKE_OTHER_SESSIONS = graphql(`
	mutation RevokeOtherSessions {
		revokeOtherSessions
	}
`);

const REQUEST_VERIFICATION = graphql(
	`
		mutation RequestEmailVerification {
			requestEmailVerification {
				__typename
				... on VerificationSent {
					email
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const UPDATE_ME = graphql(
	`
		mutation UpdateMe($input: UpdateMeInput!) {
			updateMe(input: $input) {
				__typename
				... on UpdateMePayload {
					user {
						email
						pendingEmail
					}
					login {
						token
						expiresAt
					}
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/** A platform-wide provider's account connected to the person's (docs/architecture.md#single-sign-on). */
export type ConnectedSignIn = ResultOf<typeof CONNECTED_SIGN_INS>['mySsoIdentities'][number];

type UpdateResult = ResultOf<typeof UPDATE_ME>['updateMe'];

const RATE_LIMITED = 'Too many attempts. Please wait a while and try again.';

/**
 * Why connecting a provider did not work, in the page's words. /sso/{id}/* ends a refusal on /login?sso_error=<reason>
 * (docs/architecture.md#single-sign-on), which sends a signed-in person on here as ?link_error=<reason>; the
 * address bar's text is never shown.
 */
const LINK_FAILED = 'Connecting did not work, so nothing was connected. Please try again.';

const LINK_ERRORS: Record<string, string> = {
	identity_in_use:
		'That account is already connected to another Tessera account, so it was not connected to yours. Sign in to the other Tessera account and disconnect it there first, or connect a different account.',
	expired_request: 'Connecting took too long or was already done. Please start again.',
	wrong_browser: 'Connecting was started in another browser or window. Please start again here.',
	idp_error: 'The provider did not sign you in, so nothing was connected. Please try again.',
	invalid_response: "The provider's answer could not be verified, so nothing was connected. Please try again.",
	disabled: 'Signing in with that provider is switched off, so it cannot be connected now.',
	unknown_connection: 'That provider is not set up here any more, so nothing was connected.',
	rate_limited: RATE_LIMITED,
	link_failed: LINK_FAILED,
};

const linkErrorOf = (url: URL) => reasonMessage(url.searchParams.get('link_error'), LINK_ERRORS, LINK_FAILED);

/** Where connecting a provider starts (a Koa route, not a page), to come back here. */
const connectHref = (id: string) =>
	`/sso/${encodeURIComponent(id)}/start?${new URLSearchParams({ link: '1', return_to: '/portal/security' })}`;

/**
 * The connected sign-ins section (ConnectedSignIns.svelte): the providers connected to the account, the platform's
 * others to connect, the one whose disconnection is being confirmed (?disconnect=<id>), and how connecting ended
 * (?linked=1 from /sso/{id}/callback, ?link_error=<reason> from /login). A provider not offered any more (switched
 * off) stays listed, to be disconnected.
 */
async function connectedSignInsData(event: RequestEvent) {
	const { mySsoIdentities: connected, socialProviders } = await gql(event, CONNECTED_SIGN_INS);
	const params = event.url.searchParams;
	const offered = new Set(socialProviders.map((p) => p.id));
	const taken = new Set(connected.map((c) => c.connectionId));
	// Connecting sets the time of last use: the latest is the one just connected.
	const latest = connected.reduce<ConnectedSignIn | null>(
		(a, c) => (!a || c.lastSignInAt > a.lastSignInAt ? c : a),
		null,
	);
	return {
		connected: connected.map((c) => ({ ...c, offered: offered.has(c.connectionId) })),
		toConnect: socialProviders
			.filter((p) => !taken.has(p.id))
			.map((p) => ({ id: p.id, name: p.name, href: connectHref(p.id) })),
		disconnecting: connected.find((c) => c.id === params.get('disconnect')) ?? null,
		linked: params.get('linked') === '1' ? (latest?.name ?? null) : null,
		linkError: linkErrorOf(event.url),
	};
}

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: signed out goes to sign-in.
	await event.parent();
	const [{ me, mySessions }, twoFactor, connectedSignIns] = await Promise.all([
		gql(event, ME),
		twoFactorData(event),
		connectedSignInsData(event),
	]);
	return { me, sessions: mySessions, twoFactor, connectedSignIns };
};

const field = (form: FormData, name: string) => {
	const value = form.get(name);
	return typeof value === 'string' ? value : '';
};

async function updateMe(event: RequestEvent, input: VariablesOf<typeof UPDATE_ME>['input']): Promise<UpdateResult> {
	const { updateMe: result } = await gql(event, UPDATE_ME, { input });
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
		let result: ResultOf<typeof REQUEST_VERIFICATION>['requestEmailVerification'];
		try {
			({ requestEmailVerification: result } = await gql(event, REQUEST_VERIFICATION));
		} catch (err) {
			return refused(
				err,
				{ action: 'sendVerification' as const },
				{ rate_limited: 'Too many verification mails were asked for. Please try again later.' },
			);
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'sendVerification' as const, message: result.message });
		return { action: 'sendVerification' as const, sentTo: result.email };
	},

	changeEmail: async (event) => {
		const form = await event.request.formData();
		const email = field(form, 'email').trim();
		const currentPassword = field(form, 'currentPassword');
		const values = { email };
		if (email.toLowerCase() === event.locals.user?.email.toLowerCase()) {
			return fail(400, {
				action: 'changeEmail' as const,
				values,
				message: 'Nothing was changed: correct the fields marked below.',
				errors: { email: ['is already your address'] } as FieldErrors,
			});
		}
		let result: UpdateResult;
		try {
			result = await updateMe(event, { email, currentPassword });
		} catch (err) {
			return refused(
				err,
				{ action: 'changeEmail' as const, values, errors: {} as FieldErrors },
				{ rate_limited: RATE_LIMITED },
			);
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
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'cancelEmailChange' as const, message: result.message });
		return { action: 'cancelEmailChange' as const, withdrawn: pendingEmail || 'the new address' };
	},

	/**
	 * Disconnects a provider from the account, once confirmed (?disconnect=<id> opens the confirmation): it no longer
	 * signs the person in; their password, passkeys and other connected sign-ins stay.
	 */
	disconnectSignIn: async (event) => {
		const form = await event.request.formData();
		const id = field(form, 'id');
		if (!id || form.get('confirm') !== 'yes')
			return fail(400, {
				action: 'disconnectSignIn' as const,
				message: 'Confirm which sign-in is to be disconnected.',
			});
		const gone = 'That sign-in is no longer connected to your account.';
		try {
			const { mySsoIdentities } = await gql(event, CONNECTED_SIGN_INS);
			const identity = mySsoIdentities.find((c) => c.id === id);
			if (!identity) return fail(404, { action: 'disconnectSignIn' as const, message: gone });
			await gql(event, UNLINK_SSO_IDENTITY, { id });
			return { action: 'disconnectSignIn' as const, disconnected: identity.name };
		} catch (err) {
			return refused(err, { action: 'disconnectSignIn' as const }, { not_found: gone, rate_limited: RATE_LIMITED });
		}
	},

	/** Ends one of the person's sessions; ending this browser's own signs out, as /logout does. */
	revokeSession: async (event) => {
		const form = await event.request.formData();
		const id = field(form, 'id');
		if (!id) return fail(400, { action: 'revokeSession' as const, message: 'Choose the session to sign out.' });
		let result: ResultOf<typeof REVOKE_SESSION>['revokeSession'];
		try {
			({ revokeSession: result } = await gql(event, REVOKE_SESSION, { id }));
		} catch (err) {
			return refused(err, { action: 'revokeSession' as const }, { not_found: 'That session has already ended.' });
		}
		if (result.__typename === 'UserError')
			return fail(userErrorStatus(result), { action: 'revokeSession' as const, message: result.message });
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
			({ revokeOtherSessions: ended } = await gql(event, REVOKE_OTHER_SESSIONS));
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
			return fail(400, {
				action: 'changePassword' as const,
				message: 'Nothing was changed: correct the fields marked below.',
				errors: { passwordRepeat: ['does not match the new password'] } as FieldErrors,
			});
		}
		let result: UpdateResult;
		try {
			result = await updateMe(event, { currentPassword, password });
		} catch (err) {
			return refused(
				err,
				{ action: 'changePassword' as const, errors: {} as FieldErrors },
				{ rate_limited: RATE_LIMITED },
			);
		}
		if (result.__typename === 'UserError') return changeFailure('changePassword', result, {}, PASSWORD_LABELS);
		// The new password ended every session, this browser's too: it carries on with the one the change issued.
		if (result.login) setSessionCookie(event, result.login.token, result.login.expiresAt);
		return { action: 'changePassword' as const, passwordChanged: true };
	},
};
