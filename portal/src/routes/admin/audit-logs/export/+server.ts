// GET /admin/audit-logs/export: the entries the page's filters select, all pages of them, streamed as CSV.
import { requireOrgAdmin } from '#lib/server/gates.ts';
import { actorKind } from '../actors.ts';
import { auditPage, filtersFrom, type AuditEntry } from '../audit-logs.server.ts';
import { csvRow } from '../csv.ts';
import type { RequestHandler } from './$types.js';

const HEADER = [
	'time_utc',
	'organization_id',
	'organization',
	'action',
	'outcome',
	'actor_type',
	'actor_name',
	'actor_email',
	'actor_id',
	'target_type',
	'target_id',
	'ip',
	'user_agent',
	'details',
];

const line = (e: AuditEntry) =>
	csvRow([
		e.createdAt,
		e.organizationId,
		e.organization?.name,
		e.action,
		e.outcome,
		actorKind(e.actor.type),
		e.actor.name,
		e.actor.email,
		e.actor.id,
		e.targetType,
		e.targetId,
		e.ip,
		e.userAgent,
		e.details,
	]);

export const GET: RequestHandler = async (event) => {
	// An endpoint does not run the layout's gate: the same rule, here.
	requireOrgAdmin(event, 'export the audit log');
	const filters = filtersFrom(event.url);
	// The first page before the response starts, so that a bad filter is a 400, not a broken download.
	let page = await auditPage(event, filters, { limit: 100 });
	const encoder = new TextEncoder();
	let header = true;
	const body = new ReadableStream<Uint8Array>({
		// One page of at most 100 entries each time the reader wants more: memory stays flat however long the trail.
		async pull(controller) {
			let chunk = header ? csvRow(HEADER) : '';
			header = false;
			chunk += page.items.map(line).join('');
			controller.enqueue(encoder.encode(chunk));
			if (!page.nextCursor) return controller.close();
			page = await auditPage(event, filters, { limit: 100, cursor: page.nextCursor });
		},
	});
	const day = new Date().toISOString().slice(0, 10);
	return new Response(body, {
		headers: {
			'content-type': 'text/csv; charset=utf-8',
			'content-disposition': `attachment; filename="audit-log-${day}.csv"`,
			'cache-control': 'no-store',
		},
	});
};
