// What the mail log's two pages share: the platform-admin gate and a mail's fields.
import { error, type RequestEvent } from '@sveltejs/kit';
import { graphql, type ResultOf } from '#lib/server/graphql.ts';

/** A mail as the log lists it: what was sent to whom, and how its sending went. */
export const SUMMARY_FIELDS = graphql(`
	fragment MailSummaryFields on Mail {
		id
		kind
		to
		subject
		status
		attempts
		lastError
		sentAt
		createdAt
	}
`);

export type MailStatus = ResultOf<typeof SUMMARY_FIELDS>['status'];

/**
 * Mail goes to every organization's people and carries their single-use links: platform administrators only, on
 * top of the admin layout's gate (which lets any organization's owners and admins in).
 */
export function requirePlatformAdmin(event: Pick<RequestEvent, 'locals'>): void {
	if (!event.locals.platformAdmin) error(403, 'Only platform administrators read the mail log.');
}
