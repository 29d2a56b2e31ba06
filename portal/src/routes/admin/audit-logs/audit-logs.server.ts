// What the audit-log page and its CSV export share: the filters (the query parameters of GET /api/v1/audit-logs),
// read from the URL, and one page of entries from GraphQL.
import { gql, graphql, GraphQLRequestError, type ResultOf, type VariablesOf } from '#lib/server/graphql.ts';

/** URL parameter -> GraphQL argument. */
export const FILTERS = {
	organization_id: 'organizationId',
	actor: 'actor',
	action: 'action',
	target_type: 'targetType',
	target_id: 'targetId',
	outcome: 'outcome',
	from: 'from',
	to: 'to',
} as const;

export type FilterName = keyof typeof FILTERS;
export type Filters = Partial<Record<FilterName, string>>;

/** The filters the URL sets (empty fields of the GET form are left out). */
export function filtersFrom(url: URL): Filters {
	const filters: Filters = {};
	for (const name of Object.keys(FILTERS) as FilterName[]) {
		const value = url.searchParams.get(name)?.trim();
		if (value) filters[name] = value;
	}
	return filters;
}

/** The query string of these filters, and of a page when `cursor` is given. */
export function searchOf(filters: Filters, cursor?: string | null): string {
	const params = new URLSearchParams(filters);
	if (cursor) params.set('cursor', cursor);
	const search = params.toString();
	return search ? `?${search}` : '';
}

const AUDIT_LOGS = graphql(`
	query AuditLogs(
		$organizationId: String
		$actor: String
		$action: String
		$targetType: String
		$targetId: String
		$outcome: String
		$from: String
		$to: String
		$limit: Int
		$cursor: String
	) {
		auditLogs(
			organizationId: $organizationId
			actor: $actor
			action: $action
			targetType: $targetType
			targetId: $targetId
			outcome: $outcome
			from: $from
			to: $to
			limit: $limit
			cursor: $cursor
		) {
			items {
				id
				organizationId
				organization {
					id
					name
				}
				action
				outcome
				targetType
				targetId
				ip
				userAgent
				details
				createdAt
				actor {
					type
					id
					name
					email
				}
			}
			nextCursor
		}
	}
`);

type AuditPage = ResultOf<typeof AUDIT_LOGS>['auditLogs'];
export type AuditEntry = AuditPage['items'][number];

export async function auditPage(
	event: Parameters<typeof gql>[0],
	filters: Filters,
	page: { limit: number; cursor?: string | null },
): Promise<AuditPage> {
	const variables: VariablesOf<typeof AUDIT_LOGS> = { limit: page.limit, cursor: page.cursor ?? null };
	for (const [name, argument] of Object.entries(FILTERS)) variables[argument] = filters[name as FilterName] ?? null;
	const { auditLogs } = await gql(event, AUDIT_LOGS, variables);
	return auditLogs;
}

export interface OrganizationChoice {
	id: string;
	name: string;
}

const ORGANIZATIONS = graphql(`
	query AuditOrganizations($cursor: String) {
		organizations(limit: 100, cursor: $cursor) {
			items {
				id
				name
				role
			}
			nextCursor
		}
	}
`);
const ORGANIZATION = graphql(`
	query AuditOrganization($id: ID!) {
		organization(id: $id) {
			id
			name
		}
	}
`);

/** How many organizations the filter lists at most (ten pages of the API); the one chosen is always among them. */
const MAX_CHOICES = 1000;

/**
 * The organizations whose trail the viewer may filter by, by name: every organization for platform admins, else
 * those where the viewer is an owner or admin (the service's rule). `selected`, when given and readable, is among
 * them, so that the filter shows its name; `more` says that the list stopped at MAX_CHOICES.
 */
export async function organizationChoices(
	event: Parameters<typeof gql>[0],
	platformAdmin: boolean,
	selected?: string,
): Promise<{ choices: OrganizationChoice[]; more: boolean }> {
	const choices: OrganizationChoice[] = [];
	let cursor: string | null = null;
	do {
		const { organizations }: ResultOf<typeof ORGANIZATIONS> = await gql(event, ORGANIZATIONS, { cursor });
		for (const o of organizations.items)
			if (platformAdmin || o.role === 'owner' || o.role === 'admin') choices.push({ id: o.id, name: o.name });
		cursor = organizations.nextCursor;
	} while (cursor && choices.length < MAX_CHOICES);
	if (selected && !choices.some((o) => o.id === selected)) {
		try {
			const { organization } = await gql(event, ORGANIZATION, { id: selected });
			if (platformAdmin) choices.push(organization);
		} catch (err) {
			// Gone, malformed or not the viewer's: the audit query says so, beside the filter.
			if (!(err instanceof GraphQLRequestError) || err.status >= 500) throw err;
		}
	}
	choices.sort((a, b) => a.name.localeCompare(b.name, 'en', { sensitivity: 'base' }) || a.id.localeCompare(b.id));
	return { choices, more: cursor !== null };
}
