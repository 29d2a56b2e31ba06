// What the organization settings pages share: the action gate, a refused operation as the form's message, and
// reading form fields and their problems.
import { requireOrgAdmin as orgAdminGate } from '#lib/server/gates.ts';
import { graphql, type ResultOf } from '#lib/server/graphql.ts';

export type { FieldProblem, Role, UserError } from '#lib/server/graphql.ts';
export { refused } from '#lib/server/errors.ts';
export { actsAsOwner } from '#lib/server/gates.ts';
export { fieldErrors, type FieldErrors } from '#lib/field-errors.ts';

type GateEvent = Parameters<typeof orgAdminGate>[0];

/** The gate of every settings action: an owner or admin of the session's current organization. */
export const requireOrgAdmin = (event: GateEvent) => orgAdminGate(event, 'change its settings');

/** A form field as one trimmed string: absent and repeated fields count as empty and as their first value. */
export const field = (form: FormData, name: string) => {
	const value = form.get(name);
	return typeof value === 'string' ? value.trim() : '';
};

/** A subscription as the settings' selects offer its seats (a directory group's, a connection's new members'). */
export const SEAT_SUBSCRIPTION_FIELDS = graphql(`
	fragment SeatSubscriptionFields on Subscription {
		id
		status
		totalSeats
		assignedSeats
		product {
			name
		}
	}
`);

/** The subscription as one option of such a select: its product, its status and its seats taken. */
export const seatChoice = (s: ResultOf<typeof SEAT_SUBSCRIPTION_FIELDS>) => ({
	id: s.id,
	label: `${s.product.name} (${s.status}, ${s.assignedSeats} of ${s.totalSeats} seats taken)`,
});
