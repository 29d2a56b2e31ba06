import { SUBSCRIPTION } from './answers.ts';
import { decimal, integer, oneOf, type Command } from './cli.ts';
import { UsageError } from './errors.ts';
import { subscriptionText } from './present.ts';
import { CYCLES, STATUSES } from './subscriptions-create.ts';

export const subscriptionsUpdate: Command = {
  name: 'subscriptions update',
  usage: 'ID [--seats N] [--price P] [--cycle monthly|yearly] [--status STATUS] [--end-date ISO|none]',
  summary: 'Change a subscription (platform admins). --end-date none removes the end date; --status cancelled cancels.',
  positional: 'subscription id',
  options: {
    seats: { type: 'string' },
    price: { type: 'string' },
    cycle: { type: 'string' },
    status: { type: 'string' },
    'end-date': { type: 'string' },
  },
  async run({ values, positional, api, out }) {
    const body: Record<string, unknown> = {};
    if (values.seats !== undefined) body.total_seats = integer(values.seats, '--seats');
    if (values.price !== undefined) body.price_per_seat = decimal(values.price, '--price');
    if (values.cycle !== undefined) body.billing_cycle = oneOf(values.cycle, '--cycle', CYCLES);
    if (values.status !== undefined) body.status = oneOf(values.status, '--status', STATUSES);
    if (values['end-date'] !== undefined) body.end_date = values['end-date'] === 'none' ? null : values['end-date'];
    if (!Object.keys(body).length)
      throw new UsageError('nothing to change: give --seats, --price, --cycle, --status or --end-date');
    const subscription = await api.patch(`/v1/subscriptions/${encodeURIComponent(positional())}`, body, SUBSCRIPTION);
    out.result(subscription, () => `updated subscription ${subscription.id}\n${subscriptionText(subscription)}`);
  },
};
