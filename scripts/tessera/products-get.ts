import type { Command } from './cli.ts';
import { productText } from './present.ts';
import { findProduct } from './resolve.ts';

export const productsGet: Command = {
  name: 'products get',
  usage: 'SLUG|ID',
  summary: 'Show one product, named by its slug or its id.',
  positional: 'product slug or id',
  options: {},
  async run({ positional, api, out }) {
    const product = await findProduct(api, positional());
    out.result(product, () => productText(product));
  },
};
