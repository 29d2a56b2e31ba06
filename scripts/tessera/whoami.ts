// `tessera whoami`: who the commands act as, asked of the server with the command's credentials.
import { USER } from './answers.ts';
import { record, type Command } from './cli.ts';

export const whoami: Command = {
  name: 'whoami',
  usage: '',
  summary: 'Show the person the commands act as.',
  options: {},
  async run({ api, out }) {
    const user = await api.get('/api/v1/users/me', USER);
    out.result(user, () =>
      record([
        ['email', user.email],
        ['id', user.id],
        ['url', api.origin.origin],
      ]),
    );
  },
};
