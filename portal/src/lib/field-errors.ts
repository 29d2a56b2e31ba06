// A mutation's UserError as messages beside the form's fields (docs/architecture.md#portals).
import { camelCase } from '../../../schema/lib/case.ts';

/** Messages per field, keyed as GraphQL names the input's fields (redirectUris...); `form` holds those of no field. */
export type FieldErrors = Record<string, string[]>;

/**
 * A UserError's problems grouped by the form field they belong to (`redirectUris.1` -> redirectUris); those of no
 * `known` field go to `form`. Given the `values` sent, a problem with one entry of a list names that entry.
 */
export function fieldErrors(
	details: readonly { path: string; message: string }[] | undefined,
	known: readonly string[],
	values: Record<string, unknown> = {}
): FieldErrors {
	const errors: FieldErrors = {};
	for (const { path, message } of details ?? []) {
		const [head = '', index] = path.split('.');
		const field = camelCase(head);
		if (!known.includes(field)) {
			(errors.form ??= []).push(message);
			continue;
		}
		const list = values[field];
		const entry = index !== undefined && /^\d+$/.test(index) && Array.isArray(list) ? `“${String(list[Number(index)] ?? '')}” ` : '';
		(errors[field] ??= []).push(entry + message);
	}
	return errors;
}
