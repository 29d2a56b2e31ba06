// Routes under /v1/products: the catalog. Fields are camelCase, as the interface gives them.
import { ValidationError } from '../../schema/errors/index.ts';
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, page, route, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const PRODUCT_FIELDS = graphql(
  `fragment ProductFields on Product { id name slug description features createdAt updatedAt }`,
);
const WRITABLE = ['name', 'slug', 'description', 'features'];

/** GraphQL would read a lone string as a one-item list; the REST body must send a list. */
function input(body: Record<string, unknown>) {
  if ('features' in body && !Array.isArray(body.features)) {
    throw new ValidationError('The request is invalid', [{ path: 'features', message: 'must be a list of strings' }]);
  }
  return fromBody(body, WRITABLE);
}

export const presentProduct = (p: ResultOf<typeof PRODUCT_FIELDS>) => ({
  id: p.id,
  name: p.name,
  slug: p.slug,
  description: p.description,
  features: p.features,
  createdAt: p.createdAt,
  updatedAt: p.updatedAt,
});

export const productRoutes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/products',
    summary: 'The product catalog',
    operation: graphql(
      `query($limit: Int, $cursor: String) { products(limit: $limit, cursor: $cursor) { items { ...ProductFields } nextCursor } }`,
      [PRODUCT_FIELDS],
    ),
    variables: ({ query }) => page(query),
    respond: (d) => ({ body: presentPage('products', d.products, presentProduct) }),
  }),
  route({
    method: 'POST',
    path: '/products',
    summary: 'Create a product (platform admins)',
    operation: graphql(
      `mutation($input: CreateProductInput!) { createProduct(input: $input) { __typename ...ProductFields ...UserErrorFields } }`,
      [PRODUCT_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: input(body) }),
    respond: (d) => ({ status: 201, body: presentProduct(unwrap(d.createProduct)) }),
  }),
  route({
    method: 'GET',
    path: '/products/:slug',
    summary: 'One product, by its slug',
    operation: graphql(`query($slug: String!) { product(slug: $slug) { ...ProductFields } }`, [PRODUCT_FIELDS]),
    variables: ({ params }) => ({ slug: params.slug }),
    respond: (d) => ({ body: presentProduct(d.product) }),
  }),
  route({
    method: 'PATCH',
    path: '/products/:id',
    summary: 'Update a product (platform admins)',
    operation: graphql(
      `mutation($id: ID!, $input: UpdateProductInput!) { updateProduct(id: $id, input: $input) { __typename ...ProductFields ...UserErrorFields } }`,
      [PRODUCT_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, input: input(body) }),
    respond: (d) => ({ body: presentProduct(unwrap(d.updateProduct)) }),
  }),
  route({
    method: 'DELETE',
    path: '/products/:id',
    summary: 'Delete a product no subscription refers to (platform admins)',
    operation: graphql(`mutation($id: ID!) { deleteProduct(id: $id) { __typename ...UserErrorFields } }`, [
      USER_ERROR_FIELDS,
    ]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteProduct), { status: 204 }),
  }),
];
