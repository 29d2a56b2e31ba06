// A mutation's UserError as messages beside the form's fields (docs/architecture.md#portals). A problem is named by
// the label the user saw on the form, never by the GraphQL field (`pricePerSeat`).
import { camelCase } from '../../../schema/lib/case.ts';

/** Messages per field, keyed as GraphQL names the input's fields (redirectUris...); `form` holds those of no field. */
export type FieldErrors = Record<string, string[]>;

/** A form's labels, keyed as GraphQL names the input's fields: `{ pricePerSeat: 'Price per seat' }`. */
export type FieldLabels = Readonly<Record<string, string>>;

type Problem = { path: string; message: string };

/**
 * What the user saw the field of `path` called: its label on the form, else its name in words
 * (`billingCycle` -> `Billing cycle`), so that no internal name reaches the page.
 */
export function labelOf(path: string, labels: FieldLabels): string {
	const [head = ''] = path.split('.');
	const field = camelCase(head);
	const label = labels[field];
	if (label) return label;
	const words = field
		.replace(/([a-z0-9])([A-Z])/g, '$1 $2')
		.toLowerCase()
		.replace(/\b(id|url|uri)(s?)\b/g, (_, word: string, plural: string) => word.toUpperCase() + plural);
	return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Each problem as one line, `Label: message`, for a form that shows them together. */
export function problemLines(details: readonly Problem[] | undefined, labels: FieldLabels): string[] {
	return (details ?? []).map(({ path, message }) => (path ? `${labelOf(path, labels)}: ${message}` : message));
}

/**
 * A UserError's problems grouped by the form field they belong to (`redirectUris.1` -> redirectUris). The fields
 * of `labels` are the form's, shown beside each field; the problems of any other go to `form`, named by their label.
 * Given the `values` sent, a problem with one entry of a list names that entry.
 */
export function fieldErrors(
	details: readonly Problem[] | undefined,
	labels: FieldLabels,
	values: Record<string, unknown> = {},
): FieldErrors {
	const errors: FieldErrors = {};
	for (const { path, message } of details ?? []) {
		const [head = '', index] = path.split('.');
		const field = camelCase(head);
		if (!Object.hasOwn(labels, field)) {
			(errors.form ??= []).push(...problemLines([{ path, message }], labels));
			continue;
		}
		const list = values[field];
		const entry =
			index !== undefined && /^\d+$/.test(index) && Array.isArray(list)
				? `“${String(list[Number(index)] ?? '')}” `
				: '';
		(errors[field] ??= []).push(entry + message);
	}
	return errors;
}
