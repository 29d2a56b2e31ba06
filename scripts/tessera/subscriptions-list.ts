import { SUBSCRIPTION } from './answers.ts';
import { oneOf, text, type Command } from './cli.ts';
import { subscriptionsTable } from './present.ts';
import { findProduct, organizationId } from './resolve.ts';
import { STATUSES } from './subscriptions-create.ts';

export const subscriptionsList: Command = {
  name: 'subscriptions list',
  usage: '[--org ORG] [--product PRODUCT] [--status STATUS]',
  summary:
    "List subscriptions: every organization's for platform admins, else the key's organization's. --org takes an id or a name, --product a slug or an id.",
  options: { org: { type: 'string' }, product: { type: 'string' }, status: { type: 'string' } },
  async run({ values, api, out }) {
    const query = new URLSearchParams();
    const status = oneOf(values.status, '--status', STATUSES);
    const org = text(values.org, '--org');
    const product = text(values.product, '--product');
    if (org !== undefined) query.set('organization_id', await organizationId(api, org));
    if (product !== undefined) query.set('product_id', (await findProduct(api, product)).id);
    if (status) query.set('status', status);
    const subscriptions = await api.all(
      `/v1/subscriptions${query.size ? `?${query}` : ''}`,
      'subscriptions',
      SUBSCRIPTION,
    );
    out.result({ subscriptions }, () => subscriptionsTable(subscriptions));
  },
};
