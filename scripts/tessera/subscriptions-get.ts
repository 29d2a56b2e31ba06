import type { Command } from './cli.ts';
import { subscriptionText } from './present.ts';

export const subscriptionsGet: Command = {
  name: 'subscriptions get',
  usage: 'ID',
  summary: 'Show one subscription.',
  positional: 'subscription id',
  options: {},
  async run({ positionals, api, out }) {
    const id = positionals[0]!;
    const subscription = await api.get(`/v1/subscriptions/${encodeURIComponent(id)}`);
    out.result(subscription, () => subscriptionText(subscription));
  },
};
