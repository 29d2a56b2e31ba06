import { error, redirect, type RequestEvent } from '@sveltejs/kit';
import { loginUrl } from './session.ts';
import { ENROL_PATH, enrolUrl } from './graphql.ts';

/**
 * An organization that requires a second factor of a person who has none shows them nothing but the page that sets
 * one up (docs/architecture.md#second-factors): also pages that ask the API nothing that would refuse them (the
 * dashboard), so they are sent there from the layouts, and back after.
 */
export function requireFactorIfRequired(event: Pick<RequestEvent, 'locals' | 'url'>) {
	if (event.locals.mfaEnrollmentRequired && event.url.pathname !== ENROL_PATH)
		redirect(303, enrolUrl(event.url.pathname + event.url.search));
}

/**
 * The gate of a page where the signed-in person answers for an application (consent, /device): sign in first, and
 * the page is never framed by another site (clickjacking) nor kept in a cache.
 */
export function requireApprovalPage(event: Pick<RequestEvent, 'locals' | 'url' | 'setHeaders'>) {
	if (!event.locals.user) redirect(303, loginUrl(event.url));
	event.setHeaders({
		'cache-control': 'no-store',
		'x-frame-options': 'DENY',
		'content-security-policy': "frame-ancestors 'none'",
	});
}

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
	requireFactorIfRequired(event);
	return { organization: locals.organization, organizationId: locals.organization.id, role: locals.role };
}

/**
 * Whether the person acts as an owner of the session's current organization: an owner, or a platform administrator
 * (who acts as owner everywhere, as the API's requireOrgRole does). Pages offer what only owners may do, such as
 * changing how people sign in (docs/architecture.md#single-sign-on), only then; the API refuses it to anyone else.
 */
export const actsAsOwner = (locals: App.Locals) => locals.role === 'owner' || locals.platformAdmin;

/**
 * The platform pages' gate (docs/architecture.md#tenancy-and-roles): a platform administrator, else sign-in or a
 * 403 saying what only they can `doWhat`. Applied by the page's load and again by its actions.
 */
export function requirePlatformAdmin(event: Pick<RequestEvent, 'locals' | 'url'>, doWhat: string) {
	if (!event.locals.user) redirect(303, loginUrl(event.url));
	if (!event.locals.platformAdmin) error(403, `Only platform administrators can ${doWhat}.`);
}
