// The person signed in with `tessera login` (login.ts), as each command uses them: the stored refresh token is spent
// once for the command, for an access token with the scope `api`, and the next refresh token stored in its place
// (credentials.ts). Tessera's own command-line client is public, so the client_id is all it sends
// (docs/architecture.md#apps-without-secrets).
import { TOKENS, type Check } from './answers.ts';
import { changeLogins, credentialsFile, entryOf, readLogins } from './credentials.ts';
import { ApiError } from './errors.ts';

/** The client Tessera makes for its command line, the same at every Tessera (schema/modules/clients/cli-client.ts). */
export const CLI_CLIENT_ID = 'tessera-cli';
export const CLI_SCOPE = 'openid email offline_access api';

/** Posts a form to one of the --url origin's OAuth endpoints (cli.ts createApi). */
export type Form = <T>(path: string, fields: Record<string, string>, expected: Check<T>) => Promise<T>;

/**
 * A fresh access token of the person signed in at `origin`, or null when no one is. A refresh token the server no
 * longer takes (signed out elsewhere, revoked, expired) is removed, and the person asked to sign in again.
 */
export async function storedAccessToken(form: Form, origin: URL, env: NodeJS.ProcessEnv): Promise<string | null> {
  const entry = entryOf(origin);
  const file = credentialsFile(env);
  // No one signed in: nothing is locked, made or written.
  if (!(await readLogins(file))[entry]) return null;
  const outcome = await changeLogins<{ token: string | null; ended?: true }>(file, async (logins) => {
    const login = logins[entry];
    if (!login) return { result: { token: null } };
    try {
      const tokens = await form(
        '/oauth/token',
        { grant_type: 'refresh_token', refresh_token: login.refresh_token, client_id: login.client_id },
        TOKENS,
      );
      return {
        logins: { ...logins, [entry]: { ...login, refresh_token: tokens.refresh_token } },
        result: { token: tokens.access_token },
      };
    } catch (error) {
      if (!(error instanceof ApiError && error.code === 'invalid_grant')) throw error;
      const { [entry]: _ended, ...others } = logins;
      return { logins: others, result: { token: null, ended: true } };
    }
  });
  if (outcome.ended)
    throw new ApiError(400, `the sign-in to ${entry} has ended (signed out, or revoked): run "tessera login" again`);
  return outcome.token;
}
