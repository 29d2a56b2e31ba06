import type { Command } from './cli.ts';
import { organizationText } from './present.ts';
import { organizationId } from './resolve.ts';

export const organizationsGet: Command = {
  name: 'organizations get',
  usage: 'ID|NAME',
  summary: 'Show one organization, named by its id or its name.',
  positional: 'organization id or name',
  options: {},
  async run({ positionals, api, out }) {
    const id = await organizationId(api, positionals[0]!);
    const organization = await api.get(`/v1/organizations/${encodeURIComponent(id)}`);
    out.result(organization, () => organizationText(organization));
  },
};
