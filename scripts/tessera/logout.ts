// `tessera logout`: revokes the stored refresh token (RFC 7009), which ends its grant and every access token of it,
// and removes the entry of this URL from the credentials file. Signed out already is no error.
import { REVOKED } from './answers.ts';
import type { Command } from './cli.ts';
import { changeLogins, credentialsFile, entryOf } from './credentials.ts';

export const logout: Command = {
  name: 'logout',
  usage: '',
  summary: 'Sign out: revoke the sign-in that "tessera login" kept for this URL, and forget it.',
  options: {},
  async run({ api, out }) {
    const entry = entryOf(api.origin);
    const ended = await changeLogins(credentialsFile(process.env), async (logins) => {
      const { [entry]: login, ...others } = logins;
      if (!login) return { result: null };
      await api.form(
        '/oauth/revoke',
        { token: login.refresh_token, token_type_hint: 'refresh_token', client_id: login.client_id },
        REVOKED,
      );
      return { logins: others, result: login };
    });
    out.result({ url: entry, signed_out: ended !== null, user: ended?.user ?? null }, () =>
      ended ? `signed ${ended.user.email} out of ${entry}` : `no one was signed in to ${entry}`,
    );
  },
};
