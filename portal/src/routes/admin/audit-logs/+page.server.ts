import { error } from '@sveltejs/kit';
import { gql, GraphQLRequestError } from '#lib/server/graphql.ts';
import type { PageServerLoad } from './$types.js';

const PAGE_SIZE = 50;

const AUDIT_LOGS = /* GraphQL */ `
	query AuditLogs($org: String!, $limit: Int, $before: String) {
		auditLogs(organizationId: $org, limit: $limit, before: $before) {
			id action outcome actorType actorId targetType targetId ip userAgent details createdAt
		}
	}
`;

export interface AuditEntry {
	id: string;
	action: string;
	outcome: string;
	actorType: string;
	actorId: string | null;
	targetType: string | null;
	targetId: string | null;
	ip: string | null;
	userAgent: string | null;
	details: Record<string, unknown>;
	createdAt: string;
}

export const load: PageServerLoad = async (event) => {
	// The layout's gate first: its 403 is the answer for members, not this query's error.
	const { organization } = await event.parent();
	const before = event.url.searchParams.get('before') || null;
	let entries: AuditEntry[];
	try {
		// One more than a page: whether there are older entries, without a link to an empty page.
		({ auditLogs: entries } = await gql<{ auditLogs: AuditEntry[] }>(event, AUDIT_LOGS, { org: organization.id, limit: PAGE_SIZE + 1, before }));
	} catch (err) {
		if (err instanceof GraphQLRequestError && err.code === 'invalid_request') error(400, 'That page of the audit log does not exist.');
		throw err;
	}
	const page = entries.slice(0, PAGE_SIZE);
	return {
		entries: page,
		before,
		olderBefore: entries.length > PAGE_SIZE ? page[page.length - 1]!.id : null
	};
};
