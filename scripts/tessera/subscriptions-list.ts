import { oneOf, type Command } from './cli.ts';
import { subscriptionsTable } from './present.ts';
import { STATUSES } from './subscriptions-create.ts';

export const subscriptionsList: Command = {
  name: 'subscriptions list',
  usage: '[--org ID] [--status STATUS]',
  summary: 'List subscriptions: every organization\'s for platform admins, else the key\'s organization\'s.',
  options: { org: { type: 'string' }, status: { type: 'string' } },
  async run({ values, api, out }) {
    const query = new URLSearchParams();
    if (values.org !== undefined) query.set('organization_id', values.org as string);
    const status = oneOf(values.status, '--status', STATUSES);
    if (status) query.set('status', status);
    const subscriptions = await api.all(`/v1/subscriptions${query.size ? `?${query}` : ''}`, 'subscriptions');
    out.result({ subscriptions }, () => subscriptionsTable(subscriptions));
  },
};
