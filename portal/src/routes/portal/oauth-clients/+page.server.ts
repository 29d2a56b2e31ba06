import { fail } from '@sveltejs/kit';
import { refused, userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import type { Actions, PageServerLoad } from './$types.js';
import { formText } from '#lib/form.ts';

const CONNECTED_APPS = graphql(`
	query ConnectedApps {
		connectedApps {
			clientId
			name
			description
			scopes
			grantedAt
			lastUsedAt
		}
	}
`);

const REVOKE_CONNECTED_APP = graphql(
	`
		mutation RevokeConnectedApp($clientId: String!) {
			revokeConnectedApp(clientId: $clientId) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	const { connectedApps } = await gql(event, CONNECTED_APPS);
	return { apps: connectedApps };
};

export const actions: Actions = {
	revoke: async (event) => {
		const form = await event.request.formData();
		const clientId = formText(form, 'client_id');
		if (!clientId) return fail(400, { clientId, message: 'Choose an app to remove.' });

		let result: ResultOf<typeof REVOKE_CONNECTED_APP>['revokeConnectedApp'];
		try {
			({ revokeConnectedApp: result } = await gql(event, REVOKE_CONNECTED_APP, { clientId }));
		} catch (err) {
			// Already removed (another tab, or the app was deleted): the reloaded list says the rest.
			return refused(err, { clientId }, { not_found: 'That app is no longer connected to your account.' });
		}
		if (result.__typename === 'UserError') return fail(userErrorStatus(result), { clientId, message: result.message });
		return { removed: clientId };
	},
};
