import { nothing } from './answers.ts';
import type { Command } from './cli.ts';
import { findProduct } from './resolve.ts';

export const productsDelete: Command = {
  name: 'products delete',
  usage: 'SLUG|ID',
  summary: 'Delete a product that no subscription refers to (platform admins), named by its slug or its id.',
  positional: 'product slug or id',
  options: {},
  async run({ positional, api, out }) {
    const product = await findProduct(api, positional());
    await api.delete(`/v1/products/${encodeURIComponent(product.id)}`, nothing);
    out.result({ deleted: product.id }, () => `deleted product ${product.slug} (${product.id})`);
  },
};
