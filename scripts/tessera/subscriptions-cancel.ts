import { SUBSCRIPTION } from './answers.ts';
import type { Command } from './cli.ts';
import { subscriptionText } from './present.ts';

export const subscriptionsCancel: Command = {
  name: 'subscriptions cancel',
  usage: 'ID',
  summary: 'Cancel a subscription; the record stays, with status cancelled (platform admins).',
  positional: 'subscription id',
  options: {},
  async run({ positional, api, out }) {
    const subscription = await api.delete(`/v1/subscriptions/${encodeURIComponent(positional())}`, SUBSCRIPTION);
    out.result(subscription, () => `cancelled subscription ${subscription.id}\n${subscriptionText(subscription)}`);
  },
};
