import { ORGANIZATION } from './answers.ts';
import type { Command } from './cli.ts';
import { organizationsTable } from './present.ts';

export const organizationsList: Command = {
  name: 'organizations list',
  usage: '',
  summary: "List organizations: every one for platform admins, else the caller's.",
  options: {},
  async run({ api, out }) {
    const organizations = await api.all('/v1/organizations', 'organizations', ORGANIZATION);
    out.result({ organizations }, () => organizationsTable(organizations));
  },
};
