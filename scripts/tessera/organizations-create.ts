import { ORGANIZATION } from './answers.ts';
import { required, type Command } from './cli.ts';
import { ApiError } from './errors.ts';
import { organizationText } from './present.ts';

export const organizationsCreate: Command = {
  name: 'organizations create',
  usage: '--name NAME',
  summary: 'Create an organization owned by the person signed in (tessera login): an API key is refused.',
  options: { name: { type: 'string' } },
  async run({ values, api, out }) {
    const { name } = required(values, 'name');
    let organization;
    try {
      organization = await api.post('/v1/organizations', { name }, ORGANIZATION);
    } catch (error) {
      // The caller becomes the owner, and an API key acts for no one (openapi.json, createOrganization).
      if (!(error instanceof ApiError && error.status === 403)) throw error;
      throw new ApiError(
        403,
        `${error.message}: an organization is created by a signed-in person: run "tessera login" and leave out the API key`,
      );
    }
    out.result(organization, () => `created organization ${organization.name}\n${organizationText(organization)}`);
  },
};
