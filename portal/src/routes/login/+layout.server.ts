import { gql, graphql } from '#lib/server/graphql.ts';
import type { LayoutServerLoad } from './$types.js';

const PASSKEYS_AVAILABLE = graphql(`
	query PasskeysAvailable {
		passkeysAvailable
	}
`);

/** Whether the page offers a passkey sign-in (PasskeySignIn.svelte): not when BASE_URL's host is an IP address. */
export const load: LayoutServerLoad = async (event) => {
	const { passkeysAvailable } = await gql(event, PASSKEYS_AVAILABLE);
	return { passkeysAvailable };
};
