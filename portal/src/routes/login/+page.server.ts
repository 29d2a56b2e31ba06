import { fail, redirect, type RequestEvent } from '@sveltejs/kit';
import { refused, userErrorStatus } from '#lib/server/errors.ts';
import { enrolUrl, gql, sessionToken, type Role, type UserError } from '#lib/server/graphql.ts';
import { homeOf, safeReturnTo, setSessionCookie } from '#lib/server/session.ts';
import type { Actions, PageServerLoad } from './$types.js';

const LOGIN_PAYLOAD = 'token expiresAt mfaEnrollmentRequired user { id email name } organization { id name role }';

const LOGIN = /* GraphQL */ `
	mutation Login($email: String!, $password: String!) {
		login(input: { email: $email, password: $password }) {
			__typename
			... on LoginPayload { ${LOGIN_PAYLOAD} }
			... on MfaChallenge { mfaToken expiresAt methods }
			... on UserError { code message details { path message } }
		}
	}
`;

const COMPLETE_MFA_LOGIN = /* GraphQL */ `
	mutation CompleteMfaLogin($input: MfaLoginInput!) {
		completeMfaLogin(input: $input) {
			__typename
			... on LoginPayload { ${LOGIN_PAYLOAD} }
			... on UserError { code message details { path message } }
		}
	}
`;

const LOGOUT = /* GraphQL */ `
	mutation Logout {
		logout
	}
`;

type LoginPayload = { __typename: 'LoginPayload'; token: string; expiresAt: string; mfaEnrollmentRequired: boolean; organization: { role: Role } | null };
type MfaChallenge = { __typename: 'MfaChallenge'; mfaToken: string; expiresAt: string; methods: string[] };
type LoginResult = LoginPayload | MfaChallenge | UserError;
type CompleteResult = LoginPayload | UserError;

/** Where the visitor comes from, said above the form: the account pages send them here after a change. */
const NOTICES = {
	reset: 'Your password was changed. Sign in with the new one.',
	verified: 'Your e-mail address is confirmed. Sign in to continue.'
} as const;

function noticeFor(url: URL): string | null {
	const key = (Object.keys(NOTICES) as (keyof typeof NOTICES)[]).find((k) => url.searchParams.get(k) === '1');
	return key ? NOTICES[key] : null;
}

const RATE_LIMITED = 'Too many sign-in attempts. Please wait a moment and try again.';

/**
 * A signed-in visitor is sent on, unless the application asked for a fresh sign-in (reauth=1: prompt=login, an old
 * session for max_age, a second factor the session did not use): the form then, with their address filled in.
 */
export const load: PageServerLoad = ({ locals, url }) => {
	const returnTo = url.searchParams.get('return_to');
	const reauth = url.searchParams.get('reauth') === '1';
	if (locals.user && !reauth) redirect(303, safeReturnTo(returnTo, url.origin, homeOf(locals.role)));
	// Sent by /oauth/authorize from the application's login_hint: untrusted text, only ever a field's value.
	const loginHint = (locals.user && reauth ? locals.user.email : url.searchParams.get('login_hint')?.slice(0, 254)) ?? null;
	return { returnTo, loginHint, notice: noticeFor(url), reauth: reauth && !!locals.user };
};

const field = (form: FormData, name: string) => {
	const value = form.get(name);
	return typeof value === 'string' ? value : '';
};

/**
 * The sign-in is done: the session cookie (replacing the one of a session signed in again, which ends), and on to
 * where the visitor was going, or to set up a second factor first when the organization requires one.
 */
async function signedIn(event: RequestEvent, result: LoginPayload, returnTo: string | null): Promise<never> {
	if (sessionToken(event)) await gql(event, LOGOUT).catch(() => undefined);
	setSessionCookie(event, result.token, result.expiresAt);
	// Owners and admins of the organization the session starts in land on its admin dashboard.
	const next = safeReturnTo(returnTo, event.url.origin, homeOf(result.organization?.role));
	if (result.mfaEnrollmentRequired) redirect(303, enrolUrl(next));
	redirect(303, next);
}

/** The password step; for an account with a second factor it answers the code step, the mfa token kept in the form. */
async function passwordStep(event: RequestEvent, form: FormData, returnTo: string | null) {
	const email = field(form, 'email').trim();
	const password = field(form, 'password');
	let result: LoginResult;
	try {
		({ login: result } = await gql<{ login: LoginResult }>(event, LOGIN, { email, password }));
	} catch (err) {
		return refused(err, { email }, {
			rate_limited: RATE_LIMITED,
			// Input no account can have (a NUL character, say): the same answer as a wrong password.
			invalid_request: 'Invalid email or password'
		});
	}
	if (result.__typename === 'UserError') return fail(userErrorStatus(result), { email, message: result.message });
	if (result.__typename === 'MfaChallenge') {
		return { email, secondFactor: { mfaToken: result.mfaToken, methods: result.methods, recovery: false } };
	}
	return signedIn(event, result, returnTo);
}

/**
 * The second step: a code of the authenticator app or a recovery code, with the mfa token of the first. A wrong
 * code leaves the token for another try; an expired or used token starts over at the password.
 */
async function secondFactorStep(event: RequestEvent, form: FormData, returnTo: string | null) {
	const email = field(form, 'email');
	const mfaToken = field(form, 'mfaToken');
	const methods = field(form, 'methods').split(',').filter(Boolean);
	const recovery = form.get('method') === 'recovery_code';
	const answer = field(form, recovery ? 'recoveryCode' : 'code').replace(/\s+/g, '');
	const secondFactor = { mfaToken, methods, recovery };
	const again = (status: number, message: string) => fail(status, { email, secondFactor, message });
	// The switch between the app's code and a recovery code, on a page without scripts (with them it stays in the page).
	const use = form.get('use');
	if (use === 'recovery_code' || use === 'totp') return { email, secondFactor: { ...secondFactor, recovery: use === 'recovery_code' } };
	if (!answer) return again(400, recovery ? 'Enter one of your recovery codes.' : 'Enter the 6-digit code from your authenticator app.');
	let result: CompleteResult;
	try {
		({ completeMfaLogin: result } = await gql<{ completeMfaLogin: CompleteResult }>(event, COMPLETE_MFA_LOGIN, {
			input: recovery ? { mfaToken, recoveryCode: answer } : { mfaToken, code: answer }
		}));
	} catch (err) {
		return refused(err, { email, secondFactor }, { rate_limited: RATE_LIMITED });
	}
	if (result.__typename === 'UserError') {
		if (result.details?.some((d) => d.path === 'mfaToken')) {
			// Expired (5 minutes) or used: back to the password.
			return fail(400, { email, message: 'This sign-in has expired. Enter your password again.' });
		}
		if (result.code === 'invalid_credentials') return again(401, recovery ? 'That recovery code is wrong or was already used.' : 'That code is wrong or was already used. Enter the current one.');
		return again(userErrorStatus(result), result.message);
	}
	return signedIn(event, result, returnTo);
}

export const actions: Actions = {
	// One action for both steps, told apart by the code step's mfa token: the form posts to /login either way.
	default: async (event) => {
		const form = await event.request.formData();
		const returnTo = field(form, 'return_to') || null;
		return form.has('mfaToken') ? secondFactorStep(event, form, returnTo) : passwordStep(event, form, returnTo);
	}
};
