import { fail } from '@sveltejs/kit';
import { refused, userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, type ResultOf, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import type { Actions, PageServerLoad } from './$types.js';

const VERIFY_EMAIL = graphql(
	`
		mutation VerifyEmail($token: String!) {
			verifyEmail(input: { token: $token }) {
				__typename
				... on User {
					email
					emailVerified
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

type VerifyResult = ResultOf<typeof VERIFY_EMAIL>['verifyEmail'];

/**
 * Only reads the token: link scanners and previews fetch mailed links, and the link is single use, so it is spent
 * by the button's POST alone.
 */
export const load: PageServerLoad = ({ url, locals, setHeaders }) => {
	// The token in the address is a secret: no cache may keep the page.
	setHeaders({ 'cache-control': 'no-store' });
	return { token: url.searchParams.get('token') || null, signedIn: !!locals.user };
};

export const actions: Actions = {
	default: async (event) => {
		const token = event.url.searchParams.get('token');
		if (!token)
			return fail(400, { message: 'This link is incomplete: open the whole link from the mail.', invalidLink: true });

		let result: VerifyResult;
		try {
			({ verifyEmail: result } = await gql(event, VERIFY_EMAIL, { token }));
		} catch (err) {
			return refused(err, { invalidLink: false });
		}
		if (result.__typename === 'UserError') {
			const invalidLink = result.details.some((d) => d.path === 'token');
			return fail(userErrorStatus(result), { message: result.message, invalidLink });
		}
		return { confirmed: result.email };
	},
};
