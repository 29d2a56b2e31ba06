import { gql } from '#lib/server/graphql.ts';
import type { LayoutServerLoad } from './$types.js';

/** Whether the page offers a passkey sign-in (PasskeySignIn.svelte): not when BASE_URL's host is an IP address. */
export const load: LayoutServerLoad = async (event) => {
	const { passkeysAvailable } = await gql<{ passkeysAvailable: boolean }>(
		event,
		'query PasskeysAvailable { passkeysAvailable }',
	);
	return { passkeysAvailable };
};
