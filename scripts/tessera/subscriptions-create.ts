import { decimal, integer, oneOf, required, type Command } from './cli.ts';
import { subscriptionText } from './present.ts';

export const STATUSES = ['active', 'trial', 'cancelled', 'expired'] as const;
export const CYCLES = ['monthly', 'yearly'] as const;

export const subscriptionsCreate: Command = {
  name: 'subscriptions create',
  usage: '--org ID --product SLUG --seats N --price P --cycle monthly|yearly --status active|trial|cancelled|expired [--end-date ISO]',
  summary: "Create an organization's subscription to a product (platform admins).",
  options: {
    org: { type: 'string' }, product: { type: 'string' }, seats: { type: 'string' }, price: { type: 'string' },
    cycle: { type: 'string' }, status: { type: 'string' }, 'end-date': { type: 'string' },
  },
  async run({ values, api, out }) {
    required(values, 'org', 'product', 'seats', 'price', 'cycle', 'status');
    const body = {
      organization_id: values.org,
      total_seats: integer(values.seats, '--seats'),
      price_per_seat: decimal(values.price, '--price'),
      billing_cycle: oneOf(values.cycle, '--cycle', CYCLES),
      status: oneOf(values.status, '--status', STATUSES),
      ...(values['end-date'] !== undefined ? { end_date: values['end-date'] } : {}),
    };
    const product = await api.get(`/v1/products/${encodeURIComponent(values.product as string)}`);
    const subscription = await api.post('/v1/subscriptions', { ...body, product_id: product.id });
    out.result(subscription, () => `created subscription ${subscription.id} to ${product.slug}\n${subscriptionText(subscription)}`);
  },
};
