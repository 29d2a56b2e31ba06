import { errorPage } from '#lib/server/errors.ts';
import { gql, graphql, type ResultOf } from '#lib/server/graphql.ts';
import { requirePlatformAdmin, SUMMARY_FIELDS } from '../mail.server.ts';
import type { PageServerLoad } from './$types.js';

const MAIL = graphql(
	`
		query Mail($id: ID!) {
			mail(id: $id) {
				...MailSummaryFields
				text
				html
			}
		}
	`,
	[SUMMARY_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members.
	await event.parent();
	requirePlatformAdmin(event);
	let mail: ResultOf<typeof MAIL>['mail'];
	try {
		({ mail } = await gql(event, MAIL, { id: event.params.id }));
	} catch (err) {
		errorPage(err, { not_found: 'There is no such mail.', invalid_request: 'There is no such mail.' });
	}
	// Back to the list as it was filtered.
	const to = event.url.searchParams.get('to');
	return { mail, backHref: `/admin/settings/mail${to ? `?${new URLSearchParams({ to })}` : ''}` };
};
