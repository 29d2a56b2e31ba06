import { PRODUCT } from './answers.ts';
import type { Command } from './cli.ts';
import { productsTable } from './present.ts';

export const productsList: Command = {
  name: 'products list',
  usage: '',
  summary: 'List the product catalog.',
  options: {},
  async run({ api, out }) {
    const products = await api.all('/v1/products', 'products', PRODUCT);
    out.result({ products }, () => productsTable(products));
  },
};
