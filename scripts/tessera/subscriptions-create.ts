import { SUBSCRIPTION } from './answers.ts';
import { decimal, integer, oneOf, required, type Command } from './cli.ts';
import { subscriptionText } from './present.ts';
import { findProduct, organizationId } from './resolve.ts';

export const STATUSES = ['active', 'trial', 'cancelled', 'expired'] as const;
export const CYCLES = ['monthly', 'yearly'] as const;

export const subscriptionsCreate: Command = {
  name: 'subscriptions create',
  usage:
    '--org ORG --product PRODUCT --seats N --price P --cycle monthly|yearly --status active|trial|cancelled|expired [--end-date ISO]',
  summary:
    "Create an organization's subscription to a product (platform admins). --org takes an id or a name, --product a slug or an id.",
  options: {
    org: { type: 'string' },
    product: { type: 'string' },
    seats: { type: 'string' },
    price: { type: 'string' },
    cycle: { type: 'string' },
    status: { type: 'string' },
    'end-date': { type: 'string' },
  },
  async run({ values, api, out }) {
    const { org, product: ref } = required(values, 'org', 'product', 'seats', 'price', 'cycle', 'status');
    const body = {
      total_seats: integer(values.seats, '--seats'),
      price_per_seat: decimal(values.price, '--price'),
      billing_cycle: oneOf(values.cycle, '--cycle', CYCLES),
      status: oneOf(values.status, '--status', STATUSES),
      ...(values['end-date'] !== undefined ? { end_date: values['end-date'] } : {}),
    };
    const organization_id = await organizationId(api, org);
    const product = await findProduct(api, ref);
    const subscription = await api.post(
      '/v1/subscriptions',
      { organization_id, ...body, product_id: product.id },
      SUBSCRIPTION,
    );
    out.result(
      subscription,
      () => `created subscription ${subscription.id} to ${product.slug}\n${subscriptionText(subscription)}`,
    );
  },
};
