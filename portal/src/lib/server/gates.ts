import { error, redirect, type RequestEvent } from '@sveltejs/kit';
import { loginUrl } from './session.ts';

/**
 * The admin pages' gate: an owner or admin of the session's current organization, else sign-in or a 403 saying
 * what only they can `doWhat`. The admin layout's load applies it; form actions and endpoints do not run that
 * load, so they apply it again.
 */
export function requireOrgAdmin(event: Pick<RequestEvent, 'locals' | 'url'>, doWhat: string) {
	const { locals } = event;
	if (!locals.user) redirect(303, loginUrl(event.url));
	if (!locals.organization || (locals.role !== 'owner' && locals.role !== 'admin')) {
		error(403, `Only owners and admins of the organization can ${doWhat}.`);
	}
	return { organization: locals.organization, organizationId: locals.organization.id, role: locals.role };
}
