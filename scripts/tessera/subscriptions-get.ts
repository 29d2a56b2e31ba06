import { SUBSCRIPTION } from './answers.ts';
import type { Command } from './cli.ts';
import { subscriptionText } from './present.ts';

export const subscriptionsGet: Command = {
  name: 'subscriptions get',
  usage: 'ID',
  summary: 'Show one subscription.',
  positional: 'subscription id',
  options: {},
  async run({ positional, api, out }) {
    const subscription = await api.get(`/v1/subscriptions/${encodeURIComponent(positional())}`, SUBSCRIPTION);
    out.result(subscription, () => subscriptionText(subscription));
  },
};
