// A marketplace app as a real integration would write it: an HTTPS server (its certificate from the test CA) that
// verifies the signature of every notice on the raw body and answers 401 on a mismatch, keeps the credentials it is
// sent per organization, and on a launch reads `state` (the organization id), exchanges the code with that
// organization's credentials through openid-client, and shows the user's e-mail. On uninstall it forgets the
// organization.
import { createHmac, timingSafeEqual } from 'node:crypto';
import https from 'node:https';
import * as oidc from 'openid-client';
import type { TestCa } from './https-receiver.ts';

export interface SampleAppCredentials {
  clientId: string;
  clientSecret: string;
}

export interface LaunchResult {
  organizationId: string;
  email: string;
  tokens: { access_token: string; refresh_token?: string; id_token?: string };
}

/** How the webhook endpoint answers: normally, with a status, or not at all (hang until closed). */
export type NoticeMode = 'normal' | number | 'hang';

export interface SampleApp {
  port: number;
  /** https://<host>:<port><path>; host is a name of the test certificate. */
  url(path: string, host?: string): string;
  /** The signing secret the app was given at registration (or after a rotation). */
  setSigningSecret(secret: string): void;
  mode(next: NoticeMode): void;
  /** The credentials it holds per organization id. */
  credentials: Map<string, SampleAppCredentials>;
  /** Every notice received: its verdict (the status answered), the headers and the raw body. */
  notices: {
    status: number;
    event: string | null;
    headers: Record<string, string | string[] | undefined>;
    body: string;
  }[];
  launches: LaunchResult[];
  close(): Promise<void>;
}

function signatureMatches(secret: string, body: string, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(body).digest('hex'));
  const given = Buffer.from(header.slice('sha256='.length));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const page = (title: string, content: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${content}</body></html>`;
const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

/** `issuer`: Tessera's base URL (plain HTTP in tests, hence allowInsecureRequests for the back channel). */
export async function startSampleApp(ca: TestCa, issuer: string, host = 'app.test'): Promise<SampleApp> {
  let signingSecret = '';
  let mode: NoticeMode = 'normal';
  const credentials = new Map<string, SampleAppCredentials>();
  const notices: SampleApp['notices'] = [];
  const launches: LaunchResult[] = [];

  async function notice(raw: string, headers: SampleApp['notices'][number]['headers']): Promise<number> {
    if (typeof mode === 'number') return mode;
    if (!signatureMatches(signingSecret, raw, headers['x-service-signature'])) return 401;
    const body = JSON.parse(raw) as { event: string; organizationId: string; clientId?: string; clientSecret?: string };
    if (body.event === 'app.installed')
      credentials.set(body.organizationId, { clientId: body.clientId!, clientSecret: body.clientSecret! });
    if (body.event === 'app.uninstalled') credentials.delete(body.organizationId);
    return 200;
  }

  async function launch(current: URL): Promise<{ status: number; html: string }> {
    const organizationId = current.searchParams.get('state') ?? '';
    const creds = credentials.get(organizationId);
    if (!creds)
      return { status: 400, html: page('Unknown organization', '<p>This organization has not installed the app.</p>') };
    const config = await oidc.discovery(
      new URL(issuer),
      creds.clientId,
      undefined,
      oidc.ClientSecretPost(creds.clientSecret),
      { execute: [oidc.allowInsecureRequests] },
    );
    // The launch carries no nonce, so the ID token must carry none either (openid-client checks that).
    const tokens = await oidc.authorizationCodeGrant(config, current, {
      expectedState: organizationId,
      idTokenExpected: true,
    });
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
    launches.push({ organizationId, email: String(userinfo.email), tokens });
    return {
      status: 200,
      html: page(
        'Sample App',
        `<p>Signed in as <strong id="email">${escape(String(userinfo.email))}</strong></p><p id="org">${escape(organizationId)}</p>`,
      ),
    };
  }

  const server = https.createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', `https://${host}:${(server.address() as { port: number }).port}`);
      if (req.method === 'POST' && url.pathname === '/hooks') {
        if (mode === 'hang') return void notices.push({ status: 0, event: null, headers: req.headers, body: raw });
        notice(raw, req.headers).then(
          (status) => {
            let event: string | null = null;
            try {
              event = JSON.parse(raw).event ?? null;
            } catch {
              // not JSON
            }
            notices.push({ status, event, headers: req.headers, body: raw });
            res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'refused');
          },
          () => res.writeHead(400).end('bad notice'),
        );
        return;
      }
      if (req.method === 'GET' && url.pathname === '/callback') {
        launch(url).then(
          ({ status, html }) => res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(html),
          (error: Error) =>
            res
              .writeHead(502, { 'content-type': 'text/html; charset=utf-8' })
              .end(page('Sign-in failed', `<p id="error">${escape(error.message)}</p>`)),
        );
        return;
      }
      res.writeHead(404).end('not found');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (path, h = host) => `https://${h}:${port}${path}`,
    setSigningSecret: (s) => {
      signingSecret = s;
    },
    mode: (next) => {
      mode = next;
    },
    credentials,
    notices,
    launches,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
