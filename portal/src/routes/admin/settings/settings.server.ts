// What the organization settings pages share: the action gate, a refused operation as the form's message, and
// reading form fields and their problems.
import { requireOrgAdmin as orgAdminGate } from '#lib/server/gates.ts';
import { graphql } from '#lib/server/graphql.ts';
import { SUBSCRIPTION_FIELDS, type Subscription } from '#lib/server/subscriptions.ts';

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

/** The organization's subscriptions (`$org`), whose seats the settings' selects offer (a directory group's, a connection's). */
export const SEAT_SUBSCRIPTIONS = graphql(
	`
		fragment SeatSubscriptions on Query {
			subscriptions(organizationId: $org, limit: 100) {
				items {
					...SubscriptionFields
				}
			}
		}
	`,
	[SUBSCRIPTION_FIELDS],
);

/** A subscription as one option of such a select: its product, its status and its seats taken. */
export const seatChoice = (s: Subscription) => ({
	id: s.id,
	label: `${s.product.name} (${s.status}, ${s.assignedSeats} of ${s.totalSeats} seats taken)`,
});
