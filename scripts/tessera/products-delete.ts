import type { Command } from './cli.ts';

export const productsDelete: Command = {
  name: 'products delete',
  usage: 'ID',
  summary: 'Delete a product that no subscription refers to (platform admins).',
  positional: 'product id',
  options: {},
  async run({ positionals, api, out }) {
    const id = positionals[0]!;
    await api.delete(`/v1/products/${encodeURIComponent(id)}`);
    out.result({ deleted: id }, () => `deleted product ${id}`);
  },
};
