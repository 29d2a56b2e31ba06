import { fail, redirect } from '@sveltejs/kit';
import { refused, userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, type ResultOf, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import { clearSessionCookie } from '#lib/server/session.ts';
import type { Actions, PageServerLoad } from './$types.js';
import { formText } from '#lib/form.ts';

const CONFIRM_RESET = graphql(
	`
		mutation ConfirmPasswordReset($token: String!, $password: String!) {
			confirmPasswordReset(input: { token: $token, password: $password }) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

type ConfirmResult = ResultOf<typeof CONFIRM_RESET>['confirmPasswordReset'];

type Fields = { password?: string; passwordRepeat?: string };

/**
 * Only reads the token: link scanners and previews fetch mailed links, and the link is single use, so it is spent
 * by the form's POST alone.
 */
export const load: PageServerLoad = ({ url, setHeaders }) => {
	// The token in the address is a secret: no cache may keep the page.
	setHeaders({ 'cache-control': 'no-store' });
	return { token: url.searchParams.get('token') || null };
};

const failure = (status: number, message: string, fields: Fields = {}, invalidLink = false) =>
	fail(status, { message, fields, invalidLink });

export const actions: Actions = {
	default: async (event) => {
		const token = event.url.searchParams.get('token');
		if (!token) return failure(400, 'This link is incomplete.', {}, true);
		const form = await event.request.formData();
		const password = formText(form, 'password');
		const passwordRepeat = formText(form, 'passwordRepeat');
		if (password !== passwordRepeat) {
			return failure(400, 'The password was not changed: correct the fields marked below.', {
				passwordRepeat: 'does not match the new password',
			});
		}

		let result: ConfirmResult;
		try {
			({ confirmPasswordReset: result } = await gql(event, CONFIRM_RESET, {
				token,
				password,
			}));
		} catch (err) {
			return refused(
				err,
				{ fields: {} as Fields, invalidLink: false },
				{
					rate_limited: 'Too many attempts. Please wait a moment and try again.',
				},
			);
		}
		if (result.__typename === 'UserError') {
			const { details } = result;
			// Used, expired, replaced or unknown: no other password will make this link work.
			if (details.some((d) => d.path === 'token')) return failure(userErrorStatus(result), result.message, {}, true);
			const fields: Fields = { password: details.find((d) => d.path === 'password')?.message };
			const message = fields.password
				? 'The password was not changed: correct the fields marked below.'
				: result.message;
			return failure(userErrorStatus(result), message, fields);
		}

		// Every session of the person has just ended; a session of someone else in this browser would only hide the
		// sign-in page the notice is on.
		clearSessionCookie(event);
		redirect(303, '/login?reset=1');
	},
};
