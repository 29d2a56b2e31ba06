import { PRODUCT } from './answers.ts';
import type { Command } from './cli.ts';
import { UsageError } from './errors.ts';
import { productText } from './present.ts';
import { findProduct } from './resolve.ts';

export const productsUpdate: Command = {
  name: 'products update',
  usage: 'SLUG|ID [--name NAME] [--slug SLUG] [--description TEXT] [--feature FEATURE]... [--no-features]',
  summary:
    'Change a product (platform admins), named by its slug or its id. Given --feature values replace the feature list; --no-features empties it.',
  positional: 'product slug or id',
  options: {
    name: { type: 'string' },
    slug: { type: 'string' },
    description: { type: 'string' },
    feature: { type: 'string', multiple: true },
    'no-features': { type: 'boolean' },
  },
  async run({ values, positional, api, out }) {
    if (values.feature && values['no-features']) throw new UsageError('give --feature or --no-features, not both');
    const body: Record<string, unknown> = {};
    for (const field of ['name', 'slug', 'description'] as const)
      if (values[field] !== undefined) body[field] = values[field];
    if (values.feature) body.features = values.feature;
    if (values['no-features']) body.features = [];
    if (!Object.keys(body).length)
      throw new UsageError('nothing to change: give --name, --slug, --description, --feature or --no-features');
    const { id } = await findProduct(api, positional());
    const product = await api.patch(`/v1/products/${encodeURIComponent(id)}`, body, PRODUCT);
    out.result(product, () => `updated product ${product.slug}\n${productText(product)}`);
  },
};
