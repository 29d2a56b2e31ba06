import { errorPage } from '#lib/server/errors.ts';
import { gql } from '#lib/server/graphql.ts';
import { requirePlatformAdmin, SUMMARY_FIELDS, type Mail } from '../mail.server.ts';
import type { PageServerLoad } from './$types.js';

const MAIL = /* GraphQL */ `
	query Mail($id: ID!) {
		mail(id: $id) { ${SUMMARY_FIELDS} text html }
	}
`;

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members.
	await event.parent();
	requirePlatformAdmin(event);
	let mail: Mail;
	try {
		({ mail } = await gql<{ mail: Mail }>(event, MAIL, { id: event.params.id }));
	} catch (err) {
		errorPage(err, { not_found: 'There is no such mail.', invalid_request: 'There is no such mail.' });
	}
	// Back to the list as it was filtered.
	const to = event.url.searchParams.get('to');
	return { mail, backHref: `/admin/settings/mail${to ? `?${new URLSearchParams({ to })}` : ''}` };
};
