// A real OpenID Connect provider (oidc-provider) for single sign-on tests, over HTTPS with a certificate from the test
// CA (makeTestCa: Tessera trusts it through WEBHOOK_CA_FILE, or settings.webhooks.ca). Its people sign in without a
// page: the interaction route finishes the login (and the consent) at once for the account the test chose, or for the
// one the request's login_hint names. Knobs make it misbehave as a broken or hostile provider would: ID tokens signed
// with a key it does not publish, naming another issuer or another nonce, any path answered by hand.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CompactSign, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import Provider, { type ProviderContext } from 'oidc-provider';
import type { TestCa } from './https-receiver.ts';

/** A person at the provider: `sub` plus the claims it releases (email, email_verified, name, groups...). */
export interface UpstreamAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  groups?: string[];
  [claim: string]: unknown;
}

/** How the token endpoint spoils the ID token it issues (re-signed after the change). */
export interface Misbehaviour {
  /** Signed with a key of the same kid that the provider does not publish. */
  signWithOtherKey?: boolean;
  /** Claims replaced or added (iss: another issuer, nonce: another nonce...). */
  claims?: Record<string, unknown>;
  /** Claims left out (so that they are only at the userinfo endpoint). */
  dropClaims?: string[];
}

/** Answers a request by hand (garbage, NUL bytes, a huge body...) instead of the provider. */
export type Override = (req: IncomingMessage, res: ServerResponse) => void;

export interface OidcUpstream {
  issuer: string;
  port: number;
  clientId: string;
  clientSecret: string;
  /** The redirect URIs the client may use: a test adds its connection's callback. */
  redirectUris: Set<string>;
  addAccount(account: UpstreamAccount): void;
  /** Who signs in next when login_hint names no account. */
  signInAs(sub: string): void;
  /** The next sign-ins end with this error at the callback (access_denied...), until refuse(null). */
  refuse(error: { error: string; error_description?: string } | null): void;
  misbehave(misbehaviour: Misbehaviour | null): void;
  /** Answers `path` (without its query) by hand until override(path, null). */
  override(path: string, answer: Override | null): void;
  /** Paths requested, in order (with their query). */
  requests: string[];
  close(): Promise<void>;
}

export interface OidcUpstreamOptions {
  /** The host name in the issuer (a name of the CA's certificate); tests resolve it to 127.0.0.1. */
  host?: string;
  /** The token endpoint's client authentication methods (discovery lists them); the provider's defaults otherwise. */
  clientAuthMethods?: string[];
}

// The provider's memory: one store per provider, with the index that revoking a grant needs (an authorization code
// used twice revokes what it gave, RFC 6749 4.1.2). The client comes from here too, so that redirect URIs can be added.
function memoryAdapter(client: () => Record<string, unknown>) {
  const store = new Map<string, { payload: Record<string, unknown>; expiresAt: number }>();
  const live = (key: string) => {
    const entry = store.get(key);
    if (entry && entry.expiresAt <= Date.now()) store.delete(key);
    return store.get(key)?.payload;
  };
  return class MemoryAdapter {
    readonly model: string;
    constructor(model: string) {
      this.model = model;
    }
    key(id: string) {
      return `${this.model}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number) {
      store.set(this.key(id), { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
    }
    async find(id: string) {
      return this.model === 'Client' ? (id === client().client_id ? client() : undefined) : live(this.key(id));
    }
    async findByUid(uid: string) {
      for (const [key] of store) {
        const payload = key.startsWith(`${this.model}:`) ? live(key) : undefined;
        if (payload?.uid === uid) return payload;
      }
      return undefined;
    }
    async findByUserCode() {
      return undefined;
    }
    async consume(id: string) {
      const payload = live(this.key(id));
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      store.delete(this.key(id));
    }
    async revokeByGrantId(grantId: string) {
      for (const [key, entry] of store) if (entry.payload.grantId === grantId) store.delete(key);
    }
  };
}

const decodePart = (part: string) =>
  JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;

export async function startOidcUpstream(ca: TestCa, options: OidcUpstreamOptions = {}): Promise<OidcUpstream> {
  const host = options.host ?? 'idp.test';
  const overrides = new Map<string, Override>();
  const requests: string[] = [];
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.writeHead(503).end();
  const server = https.createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    requests.push(req.url ?? '/');
    const override = overrides.get(new URL(req.url ?? '/', 'https://x').pathname);
    if (override) return override(req, res);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const issuer = `https://${host}:${port}`;

  const kid = `key-${randomBytes(4).toString('hex')}`;
  const signing = await generateKeyPair('RS256', { extractable: true });
  const other = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(signing.privateKey)), kid, alg: 'RS256', use: 'sig' };

  const clientId = `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(24).toString('base64url');
  const redirectUris = new Set<string>();
  const client = () => ({
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [...redirectUris],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method:
      options.clientAuthMethods?.includes('client_secret_basic') === false
        ? options.clientAuthMethods[0]
        : 'client_secret_basic',
  });

  const accounts = new Map<string, UpstreamAccount>();
  let current: string | undefined;
  let refusal: { error: string; error_description?: string } | null = null;
  let misbehaviour: Misbehaviour | null = null;

  const provider = new Provider(issuer, {
    adapter: memoryAdapter(client),
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    // amr with the openid scope: oidc-provider releases a claim no scope names only when the claims parameter asks.
    claims: {
      acr: null,
      auth_time: null,
      sid: null,
      iss: null,
      openid: ['sub', 'amr'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      groups: ['groups'],
    },
    // Scope claims in the ID token too, as Entra ID and Okta put them: a knob leaves them out when a test wants the
    // userinfo endpoint asked.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    ...(options.clientAuthMethods ? { clientAuthMethods: options.clientAuthMethods } : {}),
    async findAccount(_ctx: unknown, sub: string) {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return { accountId: sub, claims: async () => ({ ...account }) };
    },
    async renderError(ctx: ProviderContext, out: Record<string, unknown>) {
      ctx.body = { ...out };
    },
  });

  // The interaction: log in the chosen person and grant what the client asked, with no page in between.
  provider.use(async (ctx, next) => {
    if (!/^\/interaction\/[^/]+$/.test(ctx.path)) return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    let result: Record<string, unknown>;
    if (refusal) {
      result = { ...refusal };
    } else if (details.prompt.name === 'login') {
      const hint = typeof details.params.login_hint === 'string' ? details.params.login_hint : undefined;
      const hinted = hint ? [...accounts.values()].find((a) => a.email === hint || a.sub === hint) : undefined;
      const account = hinted ?? (current ? accounts.get(current) : undefined);
      if (!account) throw new Error('oidc-upstream: nobody to sign in (signInAs)');
      // The methods the person used (RFC 8176) go into the ID token's amr.
      result = { login: { accountId: account.sub, ...(Array.isArray(account.amr) ? { amr: account.amr } : {}) } };
    } else {
      const accountId = details.session!.accountId;
      const grant = details.grantId
        ? (await provider.Grant.find(details.grantId))!
        : new provider.Grant({ accountId, clientId: String(details.params.client_id) });
      const missingScope = details.prompt.details.missingOIDCScope as string[] | undefined;
      const missingClaims = details.prompt.details.missingOIDCClaims as string[] | undefined;
      if (missingScope) grant.addOIDCScope(missingScope.join(' '));
      if (missingClaims) grant.addOIDCClaims(missingClaims);
      result = { consent: { grantId: await grant.save() } };
    }
    const returnTo = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
    ctx.status = 303;
    ctx.redirect(returnTo);
  });

  // The token endpoint's misbehaviour: the issued ID token changed and signed again.
  provider.use(async (ctx, next) => {
    await next();
    const body = ctx.body as Record<string, unknown> | undefined;
    if (ctx.path !== '/token' || !misbehaviour || ctx.status !== 200 || typeof body?.id_token !== 'string') return;
    const [header, payload] = body.id_token.split('.');
    const claims = { ...decodePart(payload!), ...misbehaviour.claims };
    for (const name of misbehaviour.dropClaims ?? []) delete claims[name];
    const key: CryptoKey = misbehaviour.signWithOtherKey ? other.privateKey : signing.privateKey;
    body.id_token = await new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
      .setProtectedHeader(decodePart(header!) as { alg: string })
      .sign(key);
  });

  // oidc-provider reports its own errors as events; a test reads them from the answers it gets instead.
  provider.on('server_error', () => {});
  handler = provider.callback();

  return {
    issuer,
    port,
    clientId,
    clientSecret,
    redirectUris,
    addAccount: (account) => {
      accounts.set(account.sub, account);
      current ??= account.sub;
    },
    signInAs: (sub) => {
      current = sub;
    },
    refuse: (next) => {
      refusal = next;
    },
    misbehave: (next) => {
      misbehaviour = next;
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

/** A browser's cookies, per host, as far as these tests need them (no paths, no expiry beyond deletion). */
export type CookieJar = Map<string, Map<string, string>>;

export interface FollowOptions {
  /** Trusted beside Node's roots (the test CA). */
  ca: string;
  /** The cookies to send and keep; a fresh jar (a new browser) when not given. */
  jar?: CookieJar;
  maxHops?: number;
}

/** One GET as a browser sends it: every host is 127.0.0.1 here, its name kept for TLS and the Host header. */
export function browserGet(
  url: URL,
  options: FollowOptions & { jar: CookieJar },
): Promise<{ status: number; location: string | null; body: string }> {
  const cookies = options.jar.get(url.host);
  const headers: Record<string, string> = { accept: 'text/html' };
  if (cookies?.size) headers.cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const lookup = (_host: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) =>
    opts.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(
      url,
      { method: 'GET', headers, lookup: lookup as never, ...(url.protocol === 'https:' ? { ca: options.ca } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          for (const line of res.headers['set-cookie'] ?? []) {
            const [pair, ...attributes] = line.split(';');
            const eq = pair!.indexOf('=');
            const name = pair!.slice(0, eq).trim();
            const value = pair!.slice(eq + 1).trim();
            let jar = options.jar.get(url.host);
            if (!jar) options.jar.set(url.host, (jar = new Map()));
            const gone =
              !value ||
              attributes.some(
                (a) =>
                  /^\s*max-age=0\s*$/i.test(a) ||
                  (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now()),
              );
            if (gone) jar.delete(name);
            else jar.set(name, value);
          }
          const location = res.headers.location ? new URL(res.headers.location, url).href : null;
          resolve({ status: res.statusCode ?? 0, location, body: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    request.on('error', reject);
    request.end();
  });
}

/**
 * Follows redirects from `start` as a browser would until one leads to an address `stop` accepts, and returns that
 * address (not requested). Throws with the answer when a page is not a redirect.
 */
export async function followUntil(start: string, stop: (url: URL) => boolean, options: FollowOptions): Promise<string> {
  const jar = options.jar ?? new Map();
  let url = new URL(start);
  for (let hop = 0; hop < (options.maxHops ?? 12); hop++) {
    if (stop(url)) return url.href;
    const answer = await browserGet(url, { ...options, jar });
    if (!answer.location)
      throw new Error(`${url.href} answered ${answer.status} without a redirect: ${answer.body.slice(0, 500)}`);
    url = new URL(answer.location);
  }
  throw new Error(`more than ${options.maxHops ?? 12} redirects from ${start}`);
}

/** Follows a departure's URL through the provider's sign-in to the callback (the redirect URI with its query). */
export const signInAtUpstream = (url: string, redirectUri: string, ca: TestCa) =>
  followUntil(url, (u) => `${u.origin}${u.pathname}` === redirectUri, { ca: ca.caPem });
