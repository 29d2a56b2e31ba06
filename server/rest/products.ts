// Routes under /v1/products: the catalog. Fields are camelCase, as the interface gives them.
import { ValidationError } from '../../schema/errors/index.ts';
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { fromBody, page, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const PRODUCT_FIELDS = 'id name slug description features createdAt updatedAt';
const WRITABLE = ['name', 'slug', 'description', 'features'];

/** GraphQL would read a lone string as a one-item list; the REST body must send a list. */
function input(body: Record<string, unknown>) {
  if ('features' in body && !Array.isArray(body.features)) {
    throw new ValidationError('The request is invalid', [{ path: 'features', message: 'must be a list of strings' }]);
  }
  return fromBody(body, WRITABLE);
}

export const presentProduct = (p: any) => ({
  id: p.id,
  name: p.name,
  slug: p.slug,
  description: p.description,
  features: p.features,
  createdAt: p.createdAt,
  updatedAt: p.updatedAt,
});

export const productRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/products',
    summary: 'The product catalog',
    operation: `query($limit: Int, $cursor: String) { products(limit: $limit, cursor: $cursor) { items { ${PRODUCT_FIELDS} } nextCursor } }`,
    variables: ({ query }) => page(query),
    respond: (d) => ({ body: presentPage('products', d.products, presentProduct) }),
  },
  {
    method: 'POST',
    path: '/products',
    summary: 'Create a product (platform admins)',
    operation: `mutation($input: CreateProductInput!) { createProduct(input: $input) { __typename ... on Product { ${PRODUCT_FIELDS} } ${USER_ERROR_FIELDS} } }`,
    variables: ({ body }) => ({ input: input(body) }),
    respond: (d) => ({ status: 201, body: presentProduct(unwrap(d.createProduct)) }),
  },
  {
    method: 'GET',
    path: '/products/:slug',
    summary: 'One product, by its slug',
    operation: `query($slug: String!) { product(slug: $slug) { ${PRODUCT_FIELDS} } }`,
    variables: ({ params }) => ({ slug: params.slug }),
    respond: (d) => ({ body: presentProduct(d.product) }),
  },
  {
    method: 'PATCH',
    path: '/products/:id',
    summary: 'Update a product (platform admins)',
    operation: `mutation($id: ID!, $input: UpdateProductInput!) { updateProduct(id: $id, input: $input) { __typename ... on Product { ${PRODUCT_FIELDS} } ${USER_ERROR_FIELDS} } }`,
    variables: ({ params, body }) => ({ id: params.id, input: input(body) }),
    respond: (d) => ({ body: presentProduct(unwrap(d.updateProduct)) }),
  },
  {
    method: 'DELETE',
    path: '/products/:id',
    summary: 'Delete a product no subscription refers to (platform admins)',
    operation: `mutation($id: ID!) { deleteProduct(id: $id) { __typename ${USER_ERROR_FIELDS} } }`,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteProduct), { status: 204 }),
  },
];
