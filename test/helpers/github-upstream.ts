// A small GitHub Enterprise Server for "Sign in with GitHub" tests, over HTTPS with a certificate from the test CA:
// the OAuth app's authorize (which signs the chosen user in at once and redirects back with a code), access_token
// (with GitHub's habits: JSON only when asked, a refused code answered 200 with an error body), and the REST API's
// /api/v3/user and /api/v3/user/emails. Any path can be answered by hand instead.
import { createHash, randomBytes } from 'node:crypto';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TestCa } from './https-receiver.ts';

export interface GithubUser {
  id: number;
  login: string;
  name: string | null;
  /** The public profile address. */
  email: string | null;
  emails: { email: string; primary: boolean; verified: boolean; visibility?: string | null }[];
}

export type Override = (req: IncomingMessage, res: ServerResponse, body: string) => void;

export interface GithubUpstream {
  /** The server's origin, as a connection's issuer. */
  origin: string;
  port: number;
  clientId: string;
  clientSecret: string;
  addUser(user: GithubUser): void;
  signInAs(login: string): void;
  /** The next authorizations end with this error at the callback (access_denied...), until refuse(null). */
  refuse(error: { error: string; error_description?: string } | null): void;
  /** Answers `path` (without its query) by hand until override(path, null). */
  override(path: string, answer: Override | null): void;
  /** Requests received: method, path with query, headers, body. */
  requests: { method: string; path: string; headers: IncomingMessage['headers']; body: string }[];
  close(): Promise<void>;
}

const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));

export async function startGithubUpstream(ca: TestCa, host = 'github.test'): Promise<GithubUpstream> {
  const clientId = `Iv1.${randomBytes(8).toString('hex')}`;
  const clientSecret = randomBytes(20).toString('hex');
  const users = new Map<string, GithubUser>();
  let current: string | undefined;
  let refusal: { error: string; error_description?: string } | null = null;
  const overrides = new Map<string, Override>();
  const requests: GithubUpstream['requests'] = [];
  /** Codes in flight (10 minutes at GitHub, single use) and tokens issued. */
  const codes = new Map<string, { login: string; redirectUri: string; challenge: string | null }>();
  const tokens = new Map<string, string>();

  const server = https.createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'https://github.test');
      requests.push({ method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body });
      const override = overrides.get(url.pathname);
      if (override) return override(req, res, body);
      route(req, res, url, body);
    });
  });

  function route(req: IncomingMessage, res: ServerResponse, url: URL, body: string) {
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      const q = url.searchParams;
      const redirectUri = q.get('redirect_uri');
      if (q.get('client_id') !== clientId || !redirectUri) return res.writeHead(404).end('Not Found');
      const back = new URL(redirectUri);
      if (q.get('state')) back.searchParams.set('state', q.get('state')!);
      if (refusal) {
        back.searchParams.set('error', refusal.error);
        if (refusal.error_description) back.searchParams.set('error_description', refusal.error_description);
      } else {
        const login = users.has(q.get('login') ?? '') ? q.get('login')! : current;
        if (!login) throw new Error('github-upstream: nobody to sign in (signInAs)');
        if (q.get('code_challenge') && q.get('code_challenge_method') !== 'S256')
          return res.writeHead(400).end('unsupported code_challenge_method');
        const code = randomBytes(10).toString('hex');
        codes.set(code, { login, redirectUri, challenge: q.get('code_challenge') });
        back.searchParams.set('code', code);
      }
      return res.writeHead(302, { location: back.href }).end();
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      const form = new URLSearchParams(body);
      // GitHub answers form-encoded unless asked for JSON, and a refused code with 200 and an error.
      const answer = (payload: Record<string, string>) =>
        (req.headers.accept ?? '').includes('application/json')
          ? json(res, 200, payload)
          : res
              .writeHead(200, { 'content-type': 'application/x-www-form-urlencoded' })
              .end(new URLSearchParams(payload).toString());
      if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret) {
        return answer({
          error: 'incorrect_client_credentials',
          error_description: 'The client_id and/or client_secret passed are incorrect.',
        });
      }
      const code = codes.get(form.get('code') ?? '');
      codes.delete(form.get('code') ?? '');
      const verifier = form.get('code_verifier');
      const pkceHolds =
        !code?.challenge || (verifier && createHash('sha256').update(verifier).digest('base64url') === code.challenge);
      if (!code || !pkceHolds || (form.get('redirect_uri') && form.get('redirect_uri') !== code.redirectUri)) {
        return answer({
          error: 'bad_verification_code',
          error_description: 'The code passed is incorrect or expired.',
        });
      }
      const token = `gho_${randomBytes(18).toString('hex')}`;
      tokens.set(token, code.login);
      return answer({ access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
    }
    const user = users.get(tokens.get((req.headers.authorization ?? '').replace(/^(bearer|token) /i, '')) ?? '');
    if (req.method === 'GET' && (url.pathname === '/api/v3/user' || url.pathname === '/api/v3/user/emails')) {
      if (!user) return json(res, 401, { message: 'Requires authentication' });
      if (url.pathname === '/api/v3/user')
        return json(res, 200, { id: user.id, login: user.login, name: user.name, email: user.email, type: 'User' });
      return json(
        res,
        200,
        user.emails.map((e) => ({ visibility: null, ...e })),
      );
    }
    json(res, 404, { message: 'Not Found' });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    origin: `https://${host}:${port}`,
    port,
    clientId,
    clientSecret,
    addUser: (user) => {
      users.set(user.login, user);
      current ??= user.login;
    },
    signInAs: (login) => {
      current = login;
    },
    refuse: (next) => {
      refusal = next;
    },
    override: (path, answer) => {
      if (answer) overrides.set(path, answer);
      else overrides.delete(path);
    },
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
