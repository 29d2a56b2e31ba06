import { refused, userErrorFailure } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type ResultOf } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import { field, rename, requirePlatformAdmin } from './organizations.server.ts';
import type { Actions, PageServerLoad } from './$types.js';

const LIST = graphql(`
	query Organizations($search: String, $cursor: String) {
		organizations(search: $search, limit: 50, cursor: $cursor) {
			items {
				id
				name
				isOperator
				role
				createdAt
			}
			nextCursor
		}
	}
`);

const CREATE = graphql(
	`
		mutation CreateOrganization($name: String!) {
			createOrganization(input: { name: $name }) {
				__typename
				... on Organization {
					id
					name
				}
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	await event.parent();
	requirePlatformAdmin(event);
	const search = event.url.searchParams.get('search')?.trim() ?? '';
	const page = await listPage(event, LIST, 'organizations', { search: search || null }, 'organizations');
	return { organizations: page.items, nextCursor: page.nextCursor, cursor: page.cursor, search };
};

export const actions: Actions = {
	create: async (event) => {
		requirePlatformAdmin(event);
		const values = { name: field(await event.request.formData(), 'name') };
		let result: ResultOf<typeof CREATE>['createOrganization'];
		try {
			({ createOrganization: result } = await gql(event, CREATE, values));
		} catch (err) {
			return refused(err, { action: 'create' as const, values, problems: [] as string[] });
		}
		if (result.__typename === 'UserError')
			return userErrorFailure(result, { action: 'create' as const, values }, { name: 'Name' });
		return { action: 'create' as const, created: { id: result.id, name: result.name } };
	},
	rename,
};
