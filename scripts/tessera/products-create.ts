import { PRODUCT } from './answers.ts';
import { required, type Command } from './cli.ts';
import { productText } from './present.ts';

export const productsCreate: Command = {
  name: 'products create',
  usage: '--name NAME --slug SLUG [--description TEXT] [--feature FEATURE]...',
  summary: 'Create a product (platform admins). --feature may be repeated.',
  options: {
    name: { type: 'string' },
    slug: { type: 'string' },
    description: { type: 'string' },
    feature: { type: 'string', multiple: true },
  },
  async run({ values, api, out }) {
    const { name, slug } = required(values, 'name', 'slug');
    const product = await api.post(
      '/v1/products',
      {
        name,
        slug,
        ...(values.description !== undefined ? { description: values.description } : {}),
        features: values.feature ?? [],
      },
      PRODUCT,
    );
    out.result(product, () => `created product ${product.slug}\n${productText(product)}`);
  },
};
