import { gql, graphql } from '#lib/server/graphql.ts';
import type { LayoutServerLoad } from './$types.js';

const PASSKEYS = graphql(`
	query MyPasskeys {
		passkeysAvailable
		myPasskeys {
			id
			name
			createdAt
			lastUsedAt
			deviceType
			backedUp
		}
	}
`);

/**
 * The person's passkeys for the page's passkeys section (Passkeys.svelte), loaded beside the page's own data. None
 * are offered when BASE_URL's host is an IP address: browsers refuse it as a relying party.
 */
export const load: LayoutServerLoad = async (event) => {
	// The portal's gate first: signed out goes to sign-in.
	await event.parent();
	const { passkeysAvailable, myPasskeys } = await gql(event, PASSKEYS);
	return { passkeysAvailable, passkeys: myPasskeys };
};
