import { error, fail, redirect } from '@sveltejs/kit';
import { errorPage, userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS } from '#lib/server/graphql.ts';
import { requireApprovalPage } from '#lib/server/gates.ts';
import { loginUrl } from '#lib/server/session.ts';
import type { Actions, PageServerLoad } from './$types.js';

const CONSENT_PROMPT = graphql(`
	query ConsentPrompt($request: String!) {
		consentPrompt(request: $request) {
			clientName
			clientDescription
			organizationName
			unregisteredHost
			resources
			scopes {
				name
				description
			}
		}
	}
`);

const DECIDE_CONSENT = graphql(
	`
		mutation DecideConsent($request: String!, $approve: Boolean!) {
			decideConsent(request: $request, approve: $approve) {
				__typename
				... on ConsentDecision {
					redirectTo
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

/**
 * Runs `operation`; a problem with the signed request itself (forged, expired, another user's, client gone) is
 * the error page of its status with the service's message: nothing to retry here.
 */
const orErrorPage = <T>(operation: Promise<T>): Promise<T> => operation.catch((err: unknown) => errorPage(err));

/** The application's request, as signed by /oauth/authorize; required, opaque to the portal. */
function requestParam(value: FormDataEntryValue | string | null): string {
	if (typeof value !== 'string' || !value) {
		error(400, 'The consent request is missing: start again from the application');
	}
	return value;
}

export const load: PageServerLoad = async (event) => {
	requireApprovalPage(event);
	const { url } = event;

	const request = requestParam(url.searchParams.get('request'));
	const { consentPrompt } = await orErrorPage(gql(event, CONSENT_PROMPT, { request }));
	return { request, prompt: consentPrompt };
};

export const actions: Actions = {
	default: async (event) => {
		if (!event.locals.user) redirect(303, loginUrl(event.url));
		const form = await event.request.formData();
		const request = requestParam(form.get('request'));
		const decision = form.get('decision');
		if (decision !== 'allow' && decision !== 'deny') return fail(400, { message: 'Choose Allow or Deny.' });

		const { decideConsent: result } = await orErrorPage(
			gql(event, DECIDE_CONSENT, { request, approve: decision === 'allow' }),
		);
		if (result.__typename === 'UserError') return fail(userErrorStatus(result), { message: result.message });

		// Back to the application: another origin, which Kit refuses unless told. The service built this URL from
		// the client's registered redirect URI (exact match), so it is the one external place we may send the user.
		redirect(303, result.redirectTo, { external: true });
	},
};
