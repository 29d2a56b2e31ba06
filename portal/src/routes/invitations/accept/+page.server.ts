import { error, fail, redirect, type RequestEvent } from '@sveltejs/kit';
import { fieldErrors, type FieldErrors } from '#lib/field-errors.ts';
import { errorPage, userErrorStatus } from '#lib/server/errors.ts';
import { enrolUrl, gql, graphql, GraphQLRequestError, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import type { ResultOf, UserError, VariablesOf } from '#lib/server/graphql.ts';
import { clearSessionCookie, endSession, HOME, setSessionCookie } from '#lib/server/session.ts';
import type { Actions, PageServerLoad } from './$types.js';
import { formText } from '#lib/form.ts';

const PREVIEW = graphql(`
	query InvitationPreview($token: String!) {
		invitationPreview(token: $token) {
			status
			organizationName
			inviterName
			email
			role
			expiresAt
			accountExists
		}
	}
`);

const ACCEPT = graphql(
	`
		mutation Accept($input: AcceptInvitationInput!) {
			acceptInvitation(input: $input) {
				__typename
				... on LoginPayload {
					token
					expiresAt
					mfaEnrollmentRequired
					organization {
						id
					}
				}
				... on MfaChallenge {
					mfaToken
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const SWITCH_ORGANIZATION = graphql(
	`
		mutation SwitchOrganization($organizationId: String!) {
			switchOrganization(organizationId: $organizationId) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/**
 * What the link is for: the details only while the invitation is pending (the service gives them only then), or
 * null for a token that is not one.
 */
function previewOf(preview: ResultOf<typeof PREVIEW>['invitationPreview']) {
	if (!preview) return null;
	const { status, email, organizationName, role, expiresAt, accountExists, inviterName } = preview;
	if (status !== 'pending') return { status };
	if (email === null || organizationName === null || role === null || expiresAt === null || accountExists === null)
		throw new Error('The service answered a pending invitation without its details');
	return { status, email, organizationName, role, expiresAt, accountExists, inviterName };
}

/** The invitation's secret, from the link the invitee was given; the page can do nothing without it. */
function invitationToken(url: URL): string {
	const token = url.searchParams.get('token');
	if (!token) error(400, 'This invitation link is incomplete: copy the whole link, or ask for it again.');
	return token;
}

/** This page again, for the same invitation. */
const pageFor = (token: string) => `/invitations/accept?${new URLSearchParams({ token })}`;

/**
 * Accepting is signing in (docs/architecture.md#invitations): an invited address that has an account signs in on
 * /login as always (its second factor, its identity provider when its organization requires one, a passkey), and
 * comes back here to join in that session.
 */
const signInFor = (token: string, email: string) =>
	`/login?${new URLSearchParams({ return_to: pageFor(token), ...(email ? { login_hint: email } : {}) })}`;

/** Joined: on to the dashboard, or first to set up a second factor when the organization joined requires one. */
const joined = (result: { mfaEnrollmentRequired: boolean }): never =>
	redirect(303, result.mfaEnrollmentRequired ? enrolUrl(HOME) : HOME);

export const load: PageServerLoad = async (event) => {
	const { url, setHeaders } = event;
	const token = invitationToken(url);
	// The token in the address is a secret: keep it out of caches and other sites' Referer headers, and the
	// page out of frames. (Not no-referrer: Chromium then sends `Origin: null` with the form's POST, which
	// Kit's CSRF check refuses.)
	setHeaders({
		'cache-control': 'no-store',
		'referrer-policy': 'same-origin',
		'x-frame-options': 'DENY',
		'content-security-policy': "frame-ancestors 'none'",
	});
	let invitation: ReturnType<typeof previewOf>;
	try {
		invitation = previewOf((await gql(event, PREVIEW, { token })).invitationPreview);
	} catch (err) {
		errorPage(err);
	}
	const signInHref = invitation?.status === 'pending' ? signInFor(token, invitation.email) : null;
	return { token, invitation, signInHref };
};

/** Runs the mutation; a top-level rate limit becomes a 429 for the form, anything else is unexpected. */
async function accept(event: RequestEvent, input: VariablesOf<typeof ACCEPT>['input']) {
	try {
		const { acceptInvitation } = await gql(event, ACCEPT, { input });
		return acceptInvitation;
	} catch (err) {
		if (err instanceof GraphQLRequestError && err.code === 'rate_limited') return null;
		throw err;
	}
}

/** A used, expired or revoked invitation: no other name, password or account will make it valid. */
const isInvalidInvitation = (result: UserError) => result.details.some((d) => d.path === 'token');

/** The fields of the forms, with their labels; a problem of any other (the token) is the form's. */
const FORM_LABELS = { name: 'Name', password: 'Password' };

/** The service's answer as the form shows it: a message, each field's problems, and whether retrying can help. */
function failure(result: UserError, name?: string) {
	const fields = fieldErrors(result.details, FORM_LABELS);
	const invalidInvitation = isInvalidInvitation(result);
	return fail(userErrorStatus(result), {
		code: result.code,
		message: result.message,
		fields,
		invalidInvitation,
		otherAccount: false,
		name,
	});
}

const rateLimited = (name?: string) =>
	fail(429, {
		code: 'rate_limited',
		message: 'Too many attempts. Please wait a moment and try again.',
		fields: {} as FieldErrors,
		invalidInvitation: false,
		otherAccount: false,
		name,
	});

/**
 * Signed in: join with the current account, which the service accepts when it is the invited address. The service
 * also issues a new session for it; the portal keeps the browser's session and makes the joined organization current.
 */
async function join(event: RequestEvent, token: string) {
	const result = await accept(event, { token });
	if (!result) return rateLimited();
	// The service answers a challenge only to a password, which this form never sends.
	if (result.__typename === 'MfaChallenge') error(500, 'The invitation asked for a second factor without a password');
	if (result.__typename === 'UserError') {
		if (isInvalidInvitation(result)) return failure(result);
		// Not the invited address. When that address has an account the service asks for its password
		// (invalid_credentials); when it has none, for a name and password to create it (invalid_request).
		const message =
			result.code === 'invalid_credentials' ? result.message : 'This invitation is for another e-mail address';
		return fail(403, {
			code: result.code,
			message,
			fields: {} as FieldErrors,
			invalidInvitation: false,
			otherAccount: true,
			name: undefined,
		});
	}

	if (result.organization) {
		await gql(event, SWITCH_ORGANIZATION, { organizationId: result.organization.id });
	}
	joined(result);
}

export const actions: Actions = {
	/**
	 * Signed out: create the account (name, password), then sign in. An address that has an account, or must sign in
	 * through its identity provider, signs in on /login first. Signed in: join with the current account.
	 */
	accept: async (event) => {
		const token = invitationToken(event.url);
		if (event.locals.user) return join(event, token);

		const form = await event.request.formData();
		const name = formText(form, 'name').trim();
		const password = formText(form, 'password');
		const email = formText(form, 'email');
		const result = await accept(event, { token, name: name || undefined, password: password || undefined });
		if (!result) return rateLimited(name);
		// A password for an account with a second factor (a form sent before the account existed, say): the sign-in
		// page asks for the factor; nothing was joined. So for an address that must use its identity provider.
		if (result.__typename === 'MfaChallenge' || (result.__typename === 'UserError' && result.code === 'sso_required')) {
			redirect(303, signInFor(token, email));
		}
		if (result.__typename === 'UserError') return failure(result, name);

		setSessionCookie(event, result.token, result.expiresAt);
		joined(result);
	},

	/** Signed in with another account than the invited one: sign out and come back to this invitation. */
	signOut: async (event) => {
		const token = invitationToken(event.url);
		if (event.locals.user) await endSession(event);
		clearSessionCookie(event);
		redirect(303, pageFor(token));
	},
};
