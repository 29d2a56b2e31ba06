// What the organization settings pages share: the action gate, and a refused operation as the form's message.
import { error, fail, redirect, type RequestEvent } from '@sveltejs/kit';
import { GraphQLRequestError } from '#lib/server/graphql.ts';
import { loginUrl } from '#lib/server/session.ts';

export type { Role } from '#lib/server/graphql.ts';

export interface FieldProblem {
	path: string;
	message: string;
}

export type UserError = { __typename: 'UserError'; code: string; message: string; details?: FieldProblem[] };

/**
 * Form actions do not run the layout's load, so they repeat its gate: an owner or admin of the session's current
 * organization. Returns that organization's id and the caller's role there.
 */
export function requireOrgAdmin(event: Pick<RequestEvent, 'locals' | 'url'>): { organizationId: string; role: 'owner' | 'admin' } {
	const { locals } = event;
	if (!locals.user) redirect(303, loginUrl(event.url));
	if (!locals.organization || (locals.role !== 'owner' && locals.role !== 'admin')) {
		error(403, 'Only owners and admins of the organization can change its settings.');
	}
	return { organizationId: locals.organization.id, role: locals.role };
}

/**
 * A top-level error the caller caused (the role does not allow it, the thing is gone, the session ended) as the
 * form's failure with the service's message, which is written to be shown; the status is the API's for its code.
 * Anything else (the service failing) goes on to the error page.
 */
export function refused<T extends { action: string }>(err: unknown, data: T) {
	if (err instanceof GraphQLRequestError && err.status < 500) {
		return fail(err.status, { ...data, message: err.message });
	}
	throw err;
}

/** A form field as one trimmed string: absent and repeated fields count as empty and as their first value. */
export const field = (form: FormData, name: string) => {
	const value = form.get(name);
	return typeof value === 'string' ? value.trim() : '';
};

/** Messages per field, keyed as GraphQL names the input's fields; `form` holds those of no field. */
export type FieldErrors = Record<string, string[]>;

/** The problems of a UserError grouped by field; those of no known field go to `form`. */
export function fieldErrors(details: FieldProblem[] | undefined, known: readonly string[]): FieldErrors {
	const errors: FieldErrors = {};
	for (const { path, message } of details ?? []) {
		const head = path.split('.')[0] ?? '';
		(errors[known.includes(head) ? head : 'form'] ??= []).push(message);
	}
	return errors;
}
