import { error } from '@sveltejs/kit';
import { GraphQLRequestError } from '#lib/server/graphql.ts';
import { auditPage, filtersFrom, searchOf, type AuditEntry } from './audit-logs.server.ts';
import type { PageServerLoad } from './$types.js';

const PAGE_SIZE = 50;

/** The form's labels, for the service's field problems (named as GraphQL names them). */
const LABELS: Record<string, string> = {
	organizationId: 'Organization',
	actor: 'Actor',
	action: 'Action',
	targetType: 'Target type',
	targetId: 'Target ID',
	outcome: 'Outcome',
	from: 'From',
	to: 'To'
};

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not this query's error.
	const { organization } = await event.parent();
	const filters = filtersFrom(event.url);
	const cursor = event.url.searchParams.get('cursor') || null;
	const shared = {
		filters,
		cursor,
		// Platform admins read every organization's trail unless they narrow it to their current one.
		platformAdmin: event.locals.platformAdmin,
		currentOrganization: organization,
		exportHref: `/admin/audit-logs/export${searchOf(filters)}`,
		newestHref: `/admin/audit-logs${searchOf(filters)}`
	};
	try {
		const page = await auditPage(event, filters, { limit: PAGE_SIZE, cursor });
		return { ...shared, entries: page.items, problems: [] as string[], olderHref: page.nextCursor ? searchOf(filters, page.nextCursor) : null };
	} catch (err) {
		if (!(err instanceof GraphQLRequestError) || err.code !== 'invalid_request') throw err;
		const details = (err.errors[0]?.extensions as { details?: { path: string; message: string }[] } | undefined)?.details ?? [];
		if (details.some((d) => d.path === 'cursor')) error(400, 'That page of the audit log does not exist.');
		// A filter the user typed wrong: the form shows it, with what to fix.
		const problems = details.length ? details.map((d) => `${LABELS[d.path] ?? d.path}: ${d.message}`) : [err.message];
		return { ...shared, entries: [] as AuditEntry[], problems, olderHref: null };
	}
};
