import { error, fail, redirect } from '@sveltejs/kit';
import { fieldErrors } from '#lib/field-errors.ts';
import { userErrorStatus } from '#lib/server/errors.ts';
import { gql, type UserError } from '#lib/server/graphql.ts';
import { listPage } from '#lib/server/paging.ts';
import { loginUrl } from '#lib/server/session.ts';
import type { Actions, PageServerLoad, RequestEvent } from './$types.js';
import { formText } from '#lib/form.ts';

interface Product {
	id: string;
	name: string;
	slug: string;
	description: string;
	features: string[];
	createdAt: string;
}
type Result<T> = T | UserError;

const FIELDS = 'id name slug description features createdAt';
const PRODUCTS = `query($cursor: String) { products(limit: 100, cursor: $cursor) { items { ${FIELDS} } nextCursor } }`;
const USER_ERROR = '... on UserError { code message details { path message } }';
const CREATE = `mutation($input: CreateProductInput!) { createProduct(input: $input) { __typename ... on Product { id slug } ${USER_ERROR} } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateProductInput!) { updateProduct(id: $id, input: $input) { __typename ... on Product { id slug } ${USER_ERROR} } }`;
const DELETE = `mutation($id: ID!) { deleteProduct(id: $id) { __typename ${USER_ERROR} } }`;

export const load: PageServerLoad = async (event) => {
	await event.parent();
	const page = await listPage<Product>(event, PRODUCTS, 'products', {}, 'products');
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
function failure(result: { __typename: string }, values: Record<string, unknown>) {
	if (result.__typename !== 'UserError') return null;
	const refusal = result as UserError;
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
		const { createProduct } = await gql<{ createProduct: Result<{ __typename: 'Product'; slug: string }> }>(
			event,
			CREATE,
			{ input: values },
		);
		return failure(createProduct, values) ?? { done: `Product ${values.slug} created.` };
	},
	update: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		const values = readForm(form);
		const id = formText(form, 'id');
		const { updateProduct } = await gql<{ updateProduct: Result<{ __typename: 'Product'; slug: string }> }>(
			event,
			UPDATE,
			{ id, input: values },
		);
		return failure(updateProduct, { ...values, id }) ?? { done: `Product ${values.slug} saved.` };
	},
	delete: async (event) => {
		requirePlatformAdmin(event);
		const form = await event.request.formData();
		const id = formText(form, 'id');
		if (form.get('confirm') !== 'yes')
			return fail(400, { message: 'Tick the box to confirm the deletion.', problems: [] });
		const { deleteProduct } = await gql<{ deleteProduct: Result<{ __typename: string }> }>(event, DELETE, { id });
		return failure(deleteProduct, { id }) ?? { done: `Product ${formText(form, 'slug')} deleted.` };
	},
};
