import { error } from '@sveltejs/kit';
import { GraphQLRequestError } from '#lib/server/graphql.ts';
import { fieldErrors, type FieldErrors, type FieldLabels } from '#lib/field-errors.ts';
import { auditPage, filtersFrom, organizationChoices, searchOf, type AuditEntry } from './audit-logs.server.ts';
import type { PageServerLoad } from './$types.js';

const PAGE_SIZE = 50;

/** The form's labels, by the GraphQL names of the filters: a problem is shown beside its filter, named as it is. */
const LABELS: FieldLabels = {
	organizationId: 'Organization',
	actor: 'Actor',
	action: 'Action',
	targetType: 'Target type',
	targetId: 'Target ID',
	outcome: 'Outcome',
	from: 'From',
	to: 'To',
};

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not this query's error.
	const { organization } = await event.parent();
	const filters = filtersFrom(event.url);
	const cursor = event.url.searchParams.get('cursor') || null;
	const platformAdmin = event.locals.platformAdmin;
	const { choices: organizations, more: moreOrganizations } = await organizationChoices(
		event,
		platformAdmin,
		filters.organization_id,
	);
	// Whose trail is shown: the organization chosen, else every one's (platform admins) or the current one's.
	const chosen = filters.organization_id ?? (platformAdmin ? null : organization.id);
	const shown = chosen
		? (organizations.find((o) => o.id === chosen) ?? (chosen === organization.id ? organization : null))
		: null;
	const shared = {
		filters,
		cursor,
		// Platform admins read every organization's trail unless they narrow it to one.
		platformAdmin,
		currentOrganization: organization,
		organizations,
		moreOrganizations,
		shownOrganization: shown,
		exportHref: `/admin/audit-logs/export${searchOf(filters)}`,
		newestHref: `/admin/audit-logs${searchOf(filters)}`,
	};
	try {
		const page = await auditPage(event, filters, { limit: PAGE_SIZE, cursor });
		return {
			...shared,
			entries: page.items,
			errors: {} as FieldErrors,
			olderHref: page.nextCursor ? searchOf(filters, page.nextCursor) : null,
		};
	} catch (err) {
		if (!(err instanceof GraphQLRequestError)) throw err;
		// An organization that is gone, or not the viewer's to read: said beside the filter.
		if ((err.code === 'not_found' || err.code === 'forbidden') && filters.organization_id) {
			return {
				...shared,
				entries: [] as AuditEntry[],
				errors: { organizationId: ['is unknown, or not yours to read'] } as FieldErrors,
				olderHref: null,
			};
		}
		if (err.code !== 'invalid_request') throw err;
		if (err.details.some((d) => d.path === 'cursor')) error(400, 'That page of the audit log does not exist.');
		// A filter the user typed wrong: the form shows it beside that filter, with what to fix.
		const errors = err.details.length ? fieldErrors(err.details, LABELS) : { form: [err.message] };
		return { ...shared, entries: [] as AuditEntry[], errors, olderHref: null };
	}
};
