import { fail, redirect } from '@sveltejs/kit';
import { refused, userErrorStatus } from '#lib/server/errors.ts';
import { gql, type Role, type UserError } from '#lib/server/graphql.ts';
import { homeOf, safeReturnTo, setSessionCookie } from '#lib/server/session.ts';
import type { Actions, PageServerLoad } from './$types.js';

const LOGIN = /* GraphQL */ `
	mutation Login($email: String!, $password: String!) {
		login(input: { email: $email, password: $password }) {
			__typename
			... on LoginPayload { token expiresAt user { id email name } organization { id name role } }
			... on UserError { code message details { path message } }
		}
	}
`;

type LoginResult = { __typename: 'LoginPayload'; token: string; expiresAt: string; organization: { role: Role } | null } | UserError;

/** Where the visitor comes from, said above the form: the account pages send them here after a change. */
const NOTICES = {
	reset: 'Your password was changed. Sign in with the new one.',
	verified: 'Your e-mail address is confirmed. Sign in to continue.'
} as const;

function noticeFor(url: URL): string | null {
	const key = (Object.keys(NOTICES) as (keyof typeof NOTICES)[]).find((k) => url.searchParams.get(k) === '1');
	return key ? NOTICES[key] : null;
}

export const load: PageServerLoad = ({ locals, url }) => {
	const returnTo = url.searchParams.get('return_to');
	if (locals.user) redirect(303, safeReturnTo(returnTo, url.origin, homeOf(locals.role)));
	// Sent by /oauth/authorize from the application's login_hint: untrusted text, only ever a field's value.
	const loginHint = url.searchParams.get('login_hint')?.slice(0, 254) ?? null;
	return { returnTo, loginHint, notice: noticeFor(url) };
};

export const actions: Actions = {
	default: async (event) => {
		const form = await event.request.formData();
		const email = String(form.get('email') ?? '').trim();
		const password = String(form.get('password') ?? '');
		const returnTo = String(form.get('return_to') ?? '') || null;

		let result: LoginResult;
		try {
			({ login: result } = await gql<{ login: LoginResult }>(event, LOGIN, { email, password }));
		} catch (err) {
			return refused(err, { email }, {
				rate_limited: 'Too many sign-in attempts. Please wait a moment and try again.',
				// Input no account can have (a NUL character, say): the same answer as a wrong password.
				invalid_request: 'Invalid email or password'
			});
		}

		if (result.__typename === 'UserError') return fail(userErrorStatus(result), { email, message: result.message });

		setSessionCookie(event, result.token, result.expiresAt);
		// Owners and admins of the organization the session starts in land on its admin dashboard.
		redirect(303, safeReturnTo(returnTo, event.url.origin, homeOf(result.organization?.role)));
	}
};
