import { error } from '@sveltejs/kit';
import { errorPage } from '#lib/server/errors.ts';
import { gql, graphql, GraphQLRequestError, type ResultOf } from '#lib/server/graphql.ts';
import { requirePlatformAdmin, SUMMARY_FIELDS } from './mail.server.ts';
import type { PageServerLoad } from './$types.js';

const PAGE_SIZE = 50;

const MAILS = graphql(
	`
		query Mails($to: String, $limit: Int, $cursor: String) {
			mails(to: $to, limit: $limit, cursor: $cursor) {
				items {
					...MailSummaryFields
				}
				nextCursor
			}
		}
	`,
	[SUMMARY_FIELDS],
);

type MailSummary = ResultOf<typeof SUMMARY_FIELDS>;

/** The list's address with its filter and, for a later page, the cursor. */
const listHref = (to: string | null, cursor?: string) => {
	const query = new URLSearchParams({ ...(to ? { to } : {}), ...(cursor ? { cursor } : {}) }).toString();
	return `/admin/settings/mail${query ? `?${query}` : ''}`;
};

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members.
	await event.parent();
	requirePlatformAdmin(event);
	const to = event.url.searchParams.get('to')?.trim() || null;
	const cursor = event.url.searchParams.get('cursor') || null;
	const shared = { to, cursor, firstHref: listHref(to) };
	try {
		const { mails } = await gql(event, MAILS, {
			to,
			limit: PAGE_SIZE,
			cursor,
		});
		return {
			...shared,
			mails: mails.items,
			nextHref: mails.nextCursor ? listHref(to, mails.nextCursor) : null,
			problem: null,
		};
	} catch (err) {
		if (!(err instanceof GraphQLRequestError) || err.code !== 'invalid_request') errorPage(err);
		if (err.details.some((d) => d.path === 'cursor')) error(400, 'That page of the mail log does not exist.');
		// A recipient typed wrong: the filter says what to fix.
		const problem = err.details.find((d) => d.path === 'to')?.message ?? err.message;
		return { ...shared, mails: [] as MailSummary[], nextHref: null, problem: `Recipient ${problem}` };
	}
};
