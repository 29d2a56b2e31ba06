import { error, fail, redirect } from '@sveltejs/kit';
import { fieldErrors } from '#lib/field-errors.ts';
import { userErrorStatus } from '#lib/server/errors.ts';
import { gql, graphql, USER_ERROR_FIELDS, type UserError } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import { loginUrl } from '#lib/server/session.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';
import { formText } from '#lib/form.ts';

const PRODUCTS = graphql(`
	query Products($cursor: String) {
		products(limit: 100, cursor: $cursor) {
			items {
				id
				name
				slug
				description
				features
				createdAt
			}
			nextCursor
		}
	}
`);

const CREATE = graphql(
	`
		mutation CreateProduct($input: CreateProductInput!) {
			createProduct(input: $input) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const UPDATE = graphql(
	`
		mutation UpdateProduct($id: ID!, $input: UpdateProductInput!) {
			updateProduct(id: $id, input: $input) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

const DELETE = graphql(
	`
		mutation DeleteProduct($id: ID!) {
			deleteProduct(id: $id) {
				__typename
				...UserErrorFields
			}
		}
	`,
	[USER_ERROR_FIELDS],
);

export const load: PageServerLoad = async (event) => {
	await event.parent();
	const page = await listPage(event, PRODUCTS, 'products', {}, 'products');
	return {
		products: page.items,
		nextCursor: page.nextCursor,
		cursor: page.cursor,
		canWrite: event.locals.platformAdmin,
	};
};

/** Form actions skip the layout: only platform admins change the catalog. */
function requirePlatformAdmin(event: RequestEvent) {
	if (!event.locals.user) redirect(303, loginUrl(event.url));
	if (!event.locals.platformAdmin) error(403, 'Only platform administrators change the product catalog.');
}

/** Features are typed one per line or separated by commas. */
const features = (value: FormDataEntryValue | null) =>
	(typeof value === 'string' ? value : '')
		.split(/[\n,]/)
		.map((f) => f.trim())
		.filter(Boolean);

function readForm(form: FormData) {
	return {
		name: formText(form, 'name'),
		slug: formText(form, 'slug'),
		description: formText(form, 'description'),
		features: features(form.get('features')),
	};
}

/** The form's labels, by the GraphQL names of the product's fields. */
const PRODUCT_LABELS = { name: 'Name', slug: 'Slug', description: 'Description', features: 'Features' } as const;

/**
 * A UserError as the form's failure: the service's message above, each field's problem beside that field (the
 * slug's rule, say), any other as a line of the message.
 */
function failure(refusal: UserError, values: Record<string, unknown>) {
	const { form: problems = [], ...errors } = fieldErrors(refusal.details, PRODUCT_LABELS, values);
	const message =
		refusal.code === 'invalid_request' && Object.keys(errors).length
			? 'The product was not saved: correct the fields marked below.'
			: refusal.message;
	return fail(userErrorStatus(refusal), { values, message, problems, errors });
}

export const actions: Actions = {
	create: async (event) => {
		requirePlatformAdmin(event);
		const values = readForm(await event.request.formData());
		const { createProduct } = await gql(event, CREATE, { input: values });
		if (createProduct.__typename === 'UserError') return failure(createProduct, values);
		return { done: `Product ${values.slug} created.` };
	},
	update: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		const values = readForm(form);
		const id = formText(form, 'id');
		const { updateProduct } = await gql(event, UPDATE, { id, input: values });
		if (updateProduct.__typename === 'UserError') return failure(updateProduct, { ...values, id });
		return { done: `Product ${values.slug} saved.` };
	},
	delete: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		const id = formText(form, 'id');
		if (form.get('confirm') !== 'yes')
			return fail(400, { message: 'Tick the box to confirm the deletion.', problems: [] });
		const { deleteProduct } = await gql(event, DELETE, { id });
		if (deleteProduct.__typename === 'UserError') return failure(deleteProduct, { id });
		return { done: `Product ${formText(form, 'slug')} deleted.` };
	},
};
