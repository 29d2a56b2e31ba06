import { builder } from '../../builder.ts';
import { present } from '../../lib/input.ts';
import { pageType } from '../../page-type.ts';
import { createProduct, deleteProduct, getProductBySlug, listProducts, updateProduct } from './products.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { PRODUCTS_ERROR_CODES } from './products.errors.ts';

const refusals = mutationErrors('ProductsErrorCode', PRODUCTS_ERROR_CODES);

export const ProductRef = builder.prismaObject('Product', {
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    slug: t.exposeString('slug', { description: 'Unique; also the OAuth scope that asks for this product.' }),
    description: t.exposeString('description'),
    features: t.exposeStringList('features'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const CreateProductInput = builder.inputType('CreateProductInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    slug: t.string({ required: true, description: 'Lowercase letters, digits and hyphens; unique.' }),
    description: t.string(),
    features: t.stringList(),
  }),
});
const UpdateProductInput = builder.inputType('UpdateProductInput', {
  fields: (t) => ({ name: t.string(), slug: t.string(), description: t.string(), features: t.stringList() }),
});

builder.queryField('products', (t) =>
  t.field({
    type: pageType('ProductPage', ProductRef),
    description: 'The product catalog, oldest first.',
    authScopes: { authenticated: true },
    args: { limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, args, ctx) => listProducts(ctx, present(args)),
  }),
);

builder.queryField('product', (t) =>
  t.field({
    type: ProductRef,
    authScopes: { authenticated: true },
    args: { slug: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => getProductBySlug(ctx, args.slug),
  }),
);

builder.mutationField('createProduct', (t) =>
  t.field({
    errors: refusals,
    type: ProductRef,
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: CreateProductInput, required: true }) },
    resolve: (_root, { input }, ctx) => createProduct(ctx, present(input)),
  }),
);

builder.mutationField('updateProduct', (t) =>
  t.field({
    errors: refusals,
    type: ProductRef,
    authScopes: { platformAdmin: true },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateProductInput, required: true }) },
    resolve: (_root, args, ctx) => updateProduct(ctx, String(args.id), present(args.input)),
  }),
);

builder.mutationField('deleteProduct', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    authScopes: { platformAdmin: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => deleteProduct(ctx, String(args.id)),
  }),
);
