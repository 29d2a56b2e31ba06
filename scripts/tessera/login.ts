// `tessera login`: signs a person in through the device flow (RFC 8628) against Tessera's own command-line client,
// and stores the refresh token for the next commands (credentials.ts), ending the sign-in it replaces. The code and
// the page are printed, on stderr, and the page opened in a browser where there is one; meanwhile the tool polls the
// token endpoint at the interval it was given, five seconds more at each slow_down.
import { spawn } from 'node:child_process';
import { DEVICE_AUTHORIZATION, REVOKED, TOKENS, USER } from './answers.ts';
import type { Command } from './cli.ts';
import { changeLogins, credentialsFile, entryOf } from './credentials.ts';
import { ApiError } from './errors.ts';
import { CLI_CLIENT_ID, CLI_SCOPE } from './signed-in.ts';

const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** Opens `url` in the desktop's browser, when there is a desktop; a failure to is no failure of the command. */
function openBrowser(url: string, env: NodeJS.ProcessEnv): void {
  const opener = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  if (process.platform === 'linux' && !env.DISPLAY && !env.WAYLAND_DISPLAY) return;
  try {
    const child = spawn(opener, [url], { detached: true, stdio: 'ignore' });
    child.on('error', () => {});
    child.unref();
  } catch {
    // No opener: the URL is printed.
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const login: Command = {
  name: 'login',
  usage: '[--no-browser]',
  summary: 'Sign in as a person, in a browser, and keep the sign-in for the next commands.',
  options: { 'no-browser': { type: 'boolean' } },
  async run({ values, api, out }) {
    const started = await api.form(
      '/oauth/device_authorization',
      { client_id: CLI_CLIENT_ID, scope: CLI_SCOPE },
      DEVICE_AUTHORIZATION,
    );
    // On stderr: stdout is the outcome alone, as --json prints it.
    process.stderr.write(
      `To sign in, open ${started.verification_uri} and enter the code ${started.user_code}\n` +
        `(or open ${started.verification_uri_complete})\n`,
    );
    if (!values['no-browser'] && process.stdout.isTTY) openBrowser(started.verification_uri_complete, process.env);
    let interval = Math.max(1, started.interval);
    const deadline = Date.now() + started.expires_in * 1000;
    let tokens;
    while (!tokens) {
      await sleep(interval * 1000);
      try {
        tokens = await api.form(
          '/oauth/token',
          { grant_type: DEVICE_CODE_GRANT, device_code: started.device_code, client_id: CLI_CLIENT_ID },
          TOKENS,
        );
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        if (error.code === 'authorization_pending' && Date.now() < deadline) continue;
        if (error.code === 'slow_down') {
          interval += 5;
          continue;
        }
        if (error.code === 'access_denied') throw new ApiError(error.status, 'the sign-in was denied in the browser');
        if (error.code === 'expired_token' || error.code === 'authorization_pending')
          throw new ApiError(error.status, 'the code expired before it was entered: run "tessera login" again');
        throw error;
      }
    }
    const user = await api.getWith(tokens.access_token, '/api/v1/users/me', USER);
    const entry = entryOf(api.origin);
    const { refresh_token } = tokens;
    const replaced = await changeLogins(credentialsFile(process.env), (logins) => ({
      logins: {
        ...logins,
        [entry]: { refresh_token, client_id: CLI_CLIENT_ID, user: { id: user.id, email: user.email } },
      },
      result: logins[entry],
    }));
    // The sign-in this one replaces is ended, not left to live out its refresh token; if that fails it was ended already.
    if (replaced) {
      await api
        .form(
          '/oauth/revoke',
          { token: replaced.refresh_token, token_type_hint: 'refresh_token', client_id: replaced.client_id },
          REVOKED,
        )
        .catch(() => undefined);
    }
    out.result(
      { url: entry, user: { id: user.id, email: user.email } },
      () => `signed in to ${entry} as ${user.email}`,
    );
  },
};
