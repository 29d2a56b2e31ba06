import { redirect } from '@sveltejs/kit';
import { gql, sessionToken } from '#lib/server/graphql.ts';
import { clearSessionCookie } from '#lib/server/session.ts';
import type { Actions, PageServerLoad } from './$types.js';

const LOGOUT = /* GraphQL */ `
	mutation Logout {
		logout
	}
`;

export const load: PageServerLoad = ({ locals }) => {
	if (!locals.user) redirect(303, '/login');
};

export const actions: Actions = {
	default: async (event) => {
		if (sessionToken(event)) await gql<{ logout: boolean }>(event, LOGOUT);
		clearSessionCookie(event);
		redirect(303, '/login');
	}
};
