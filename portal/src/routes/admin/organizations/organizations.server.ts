// What the platform's organization pages share: their gate and renaming (an organization's own owners rename it
// on /admin/settings).
import { requirePlatformAdmin as platformGate } from '#lib/server/gates.ts';
import { refused, userErrorFailure } from '#lib/server/errors.ts';
import { gql, type ResultOf } from '#lib/server/graphql.ts';
import { RENAME_ORGANIZATION } from '#lib/server/organizations.ts';
import type { RequestEvent } from '@sveltejs/kit';

type GateEvent = Parameters<typeof platformGate>[0];

/** Every organization is the platform's: its administrators only, in the load and again in each action. */
export const requirePlatformAdmin = (event: GateEvent) => platformGate(event, 'manage every organization');

/** A form field as one trimmed string. */
export const field = (form: FormData, name: string) => {
	const value = form.get(name);
	return typeof value === 'string' ? value.trim() : '';
};

/** The rename form's action: `id` and `name`. */
export async function rename(event: RequestEvent) {
	requirePlatformAdmin(event);
	const form = await event.request.formData();
	const values = { id: field(form, 'id'), name: field(form, 'name') };
	let result: ResultOf<typeof RENAME_ORGANIZATION>['updateOrganization'];
	try {
		({ updateOrganization: result } = await gql(event, RENAME_ORGANIZATION, values));
	} catch (err) {
		return refused(err, { action: 'rename' as const, values, problems: [] as string[] });
	}
	if (result.__typename === 'UserError')
		return userErrorFailure(result, { action: 'rename' as const, values }, { name: 'New name' });
	return { action: 'rename' as const, done: `Renamed to ${result.name}.` };
}
