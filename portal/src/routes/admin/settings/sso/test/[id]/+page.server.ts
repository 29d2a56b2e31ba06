import { errorPage } from '#lib/server/errors.ts';
import { gql, graphql } from '#lib/server/graphql.ts';
import type { PageServerLoad } from './$types.js';

const TEST_RESULT = graphql(`
	query SsoTestResult($id: String!) {
		ssoTestResult(id: $id) {
			id
			connectionId
			connectionName
			subject
			email
			emailVerified
			name
			role
			claims
		}
	}
`);

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null;

/**
 * What a test sign-in (/sso/{id}/start?test=1) received from the identity provider, for the admin who ran it: it
 * signed nobody in (docs/architecture.md#single-sign-on). The service keeps it for the sign-in request's lifetime.
 */
export const load: PageServerLoad = async (event) => {
	await event.parent();
	try {
		const { ssoTestResult } = await gql(event, TEST_RESULT, { id: event.params.id });
		return {
			result: ssoTestResult,
			// Each claim's value as readable text: strings as they are, anything else as JSON.
			claims: Object.entries(isObject(ssoTestResult.claims) ? ssoTestResult.claims : {}).map(([claim, value]) => ({
				claim,
				value: typeof value === 'string' ? value : JSON.stringify(value, null, 2),
			})),
		};
	} catch (err) {
		errorPage(err, {
			not_found:
				'This test result is not here: a result is kept for ten minutes, for the person who ran the test only. Run the test again.',
			invalid_request: 'This test result is not here. Run the test again.',
		});
	}
};
