import { fail } from '@sveltejs/kit';
import { refused, userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, type ResultOf, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import type { Actions } from './$types.js';
import { formText } from '#lib/form.ts';

const REQUEST_RESET = graphql(
	`
		mutation RequestPasswordReset($email: String!) {
			requestPasswordReset(input: { email: $email }) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

type RequestResult = ResultOf<typeof REQUEST_RESET>['requestPasswordReset'];

export const actions: Actions = {
	default: async (event) => {
		const form = await event.request.formData();
		const email = formText(form, 'email').trim();

		let result: RequestResult;
		try {
			({ requestPasswordReset: result } = await gql(event, REQUEST_RESET, {
				email,
			}));
		} catch (err) {
			return refused(
				err,
				{ email, emailError: null },
				{
					rate_limited: 'Too many reset requests for this address. Please wait a while and try again.',
				},
			);
		}

		// Only a malformed address is refused: for a well-formed one the answer is the same whether an account uses it.
		if (result.__typename === 'UserError') {
			const emailError = result.details.find((d) => d.path === 'email')?.message ?? null;
			return fail(userErrorStatus(result), {
				email,
				emailError,
				message: emailError ? 'Check the address.' : result.message,
			});
		}
		return { sent: true };
	},
};
