// What the organization settings pages share: the action gate, a refused operation as the form's message, and
// reading form fields.
import { requireOrgAdmin as orgAdminGate } from '#lib/server/gates.ts';
import type { FieldProblem } from '#lib/server/graphql.ts';

export type { FieldProblem, Role, UserError } from '#lib/server/graphql.ts';
export { refused } from '#lib/server/errors.ts';

type GateEvent = Parameters<typeof orgAdminGate>[0];

/** The gate of every settings action: an owner or admin of the session's current organization. */
export const requireOrgAdmin = (event: GateEvent) => orgAdminGate(event, 'change its settings');

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
