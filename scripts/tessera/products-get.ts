import type { Command } from './cli.ts';
import { productText } from './present.ts';

export const productsGet: Command = {
  name: 'products get',
  usage: 'SLUG',
  summary: 'Show one product.',
  positional: 'product slug',
  options: {},
  async run({ positionals, api, out }) {
    const slug = positionals[0]!;
    const product = await api.get(`/v1/products/${encodeURIComponent(slug)}`);
    out.result(product, () => productText(product));
  },
};
