// The last step of a sign-in with a passkey on /login (PasskeySignIn.svelte): the browser's answer, posted as a form
// field, is verified through the bridge like a password sign-in, and the session cookie set here. The answer says
// where the page goes next, as the password form's redirect would.
import { json, type RequestHandler } from '@sveltejs/kit';
import { GraphQLRequestError, gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import { formText } from '#lib/form.ts';
import { userErrorStatus } from '#lib/server/errors.ts';
import { homeOf, LOGIN_PAYLOAD_FIELDS, safeReturnTo, startSession } from '#lib/server/session.ts';

const PASSKEY_SIGN_IN = graphql(
	`
		mutation PasskeySignIn($input: PasskeySignInInput!) {
			passkeySignIn(input: $input) {
				__typename
				...LoginPayloadFields
				...UserErrorFields
			}
		}
	`,
	[LOGIN_PAYLOAD_FIELDS, USER_ERROR_FIELDS],
);

const refusal = (status: number, message: string) =>
	json({ message }, { status, headers: { 'cache-control': 'no-store' } });

export const POST: RequestHandler = async (event) => {
	const form = await event.request.formData();
	const text = form.get('response');
	const returnTo = formText(form, 'return_to') || null;
	let response: unknown;
	try {
		response = typeof text === 'string' && text.length <= 100_000 ? JSON.parse(text) : undefined;
	} catch {
		// refused below
	}
	if (typeof response !== 'object' || response === null) return refusal(400, 'The passkey answer could not be read.');

	let result: ResultOf<typeof PASSKEY_SIGN_IN>['passkeySignIn'];
	try {
		({ passkeySignIn: result } = await gql(event, PASSKEY_SIGN_IN, { input: { response } }));
	} catch (err) {
		if (err instanceof GraphQLRequestError && err.status < 500) {
			return refusal(
				err.status,
				err.code === 'rate_limited' ? 'Too many sign-in attempts. Please wait a moment and try again.' : err.message,
			);
		}
		throw err;
	}
	if (result.__typename === 'UserError') return refusal(userErrorStatus(result), result.message);

	// A session signed in again (a fresh sign-in an application asked for) ends, as after a password.
	await startSession(event, result);
	return json(
		{ location: safeReturnTo(returnTo, event.url.origin, homeOf(result.organization?.role)) },
		{ headers: { 'cache-control': 'no-store' } },
	);
};
