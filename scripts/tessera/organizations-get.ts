import { ORGANIZATION } from './answers.ts';
import type { Command } from './cli.ts';
import { organizationText } from './present.ts';
import { organizationId } from './resolve.ts';

export const organizationsGet: Command = {
  name: 'organizations get',
  usage: 'ID|NAME',
  summary: 'Show one organization, named by its id or its name.',
  positional: 'organization id or name',
  options: {},
  async run({ positional, api, out }) {
    const id = await organizationId(api, positional());
    const organization = await api.get(`/v1/organizations/${encodeURIComponent(id)}`, ORGANIZATION);
    out.result(organization, () => organizationText(organization));
  },
};
