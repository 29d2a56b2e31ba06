// /device (RFC 8628 3.3, docs/architecture.md#apps-without-secrets): a signed-in person types the code their device
// shows (or follows verification_uri_complete, which carries it), sees the application, its organization and what it
// asks for, and approves or denies. A wrong code counts against the person's sign-in throttle (the service's rule).
import { fail, redirect } from '@sveltejs/kit';
import { GraphQLRequestError, gql, graphql, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import { userErrorStatus } from '#lib/server/errors.ts';
import { requireApprovalPage } from '#lib/server/gates.ts';
import { loginUrl } from '#lib/server/session.ts';
import { formText } from '#lib/form.ts';
import type { Actions, PageServerLoad } from './$types.js';

const DEVICE_REQUEST = graphql(`
	query DeviceRequest($userCode: String!) {
		deviceRequest(userCode: $userCode) {
			userCode
			clientName
			clientDescription
			organizationName
			scopes {
				name
				description
			}
		}
	}
`);

const DECIDE = graphql(
	`
		mutation DecideDeviceRequest($userCode: String!, $approve: Boolean!) {
			decideDeviceRequest(userCode: $userCode, approve: $approve) {
				__typename
				... on DeviceDecision {
					approved
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/** What the service refused, as the page says it: a wrong code, a lock, a membership missing. Else it goes on. */
function refusal(err: unknown): { status: number; message: string } {
	if (err instanceof GraphQLRequestError && err.status < 500) return { status: err.status, message: err.message };
	throw err;
}

export const load: PageServerLoad = async (event) => {
	requireApprovalPage(event);
	const { url } = event;
	const typed = url.searchParams.get('user_code');
	if (!typed) return { typed: '', request: null, refused: null };
	try {
		const { deviceRequest } = await gql(event, DEVICE_REQUEST, { userCode: typed.slice(0, 32) });
		return { typed, request: deviceRequest, refused: null };
	} catch (err) {
		return { typed: typed.slice(0, 32), request: null, refused: refusal(err).message };
	}
};

export const actions: Actions = {
	default: async (event) => {
		if (!event.locals.user) redirect(303, loginUrl(event.url));
		const form = await event.request.formData();
		const userCode = formText(form, 'user_code').slice(0, 32);
		const decision = form.get('decision');
		if (decision !== 'approve' && decision !== 'deny') return fail(400, { message: 'Choose Approve or Deny.' });
		let result;
		try {
			({ decideDeviceRequest: result } = await gql(event, DECIDE, { userCode, approve: decision === 'approve' }));
		} catch (err) {
			const { status, message } = refusal(err);
			return fail(status, { message });
		}
		if (result.__typename === 'UserError') return fail(userErrorStatus(result), { message: result.message });
		return { answered: result.approved ? 'approved' : 'denied' };
	},
};
