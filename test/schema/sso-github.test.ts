// "Sign in with GitHub" (schema/modules/sso/github.protocol.ts) against a fake GitHub Enterprise Server over HTTPS
// (test/helpers/github-upstream.ts): depart sends the browser to <origin>/login/oauth/authorize with state and PKCE,
// arrive exchanges the code and reads /api/v3/user and /api/v3/user/emails. The person is GitHub's numeric id, with
// the primary address (verified only when GitHub says so). Refusals are SsoSignInError with a safe message.
import { randomBytes, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../schema/db.ts';
import { makeContext, type Context, type ContextBase } from '../../schema/context.ts';
import { systemClock } from '../../schema/lib/clock.ts';
import type { HostResolver, WebhookSettings } from '../../schema/push/destination.ts';
import { callbackUrl, type LoadedConnection, type SsoRequestState } from '../../schema/modules/sso/protocol.ts';
import { githubProtocol, githubServer } from '../../schema/modules/sso/github.protocol.ts';
import { SsoSignInError } from '../../schema/modules/sso/sso.errors.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startGithubUpstream, type GithubUpstream, type Override } from '../helpers/github-upstream.ts';
import { signInAtUpstream } from '../helpers/oidc-upstream.ts';

let database: TestDatabase;
let db: Db;
let ca: TestCa;
let github: GithubUpstream;
let ctx: Context;

const resolve: HostResolver = async () => [{ address: '127.0.0.1', family: 4 }];
const TESSERA = 'https://tessera.test';

function contextWith(webhooks: Partial<WebhookSettings> = {}): Context {
  const settings = {
    issuer: () => TESSERA,
    secretKey: randomBytes(32),
    production: false,
    webhooks: { timeoutMs: 5_000, allowPrivateNetworks: true, ca: ca.caPem, resolve, ...webhooks },
  };
  return makeContext({ db, clock: systemClock, settings } as unknown as ContextBase, null, {
    requestId: 'sso-github',
    ip: null,
    userAgent: null,
  });
}

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { maxConnections: 2 });
  ca = makeTestCa(['github.test']);
  github = await startGithubUpstream(ca);
  github.addUser({
    id: 583231,
    login: 'octocat',
    name: 'The Octocat',
    email: 'octocat@github.test',
    emails: [
      { email: 'octo@old.test', primary: false, verified: true },
      { email: 'octocat@acme.test', primary: true, verified: true },
    ],
  });
  github.addUser({
    id: 42,
    login: 'hubot',
    name: null,
    email: null,
    emails: [{ email: 'hubot@acme.test', primary: true, verified: false }],
  });
  ctx = contextWith();
});
afterAll(async () => {
  await github?.close();
  ca?.remove();
  await db?.$disconnect();
  await database?.drop();
});

function connection(overrides: Partial<LoadedConnection> = {}): LoadedConnection {
  return {
    id: randomUUID(),
    organizationId: null,
    type: 'github',
    name: 'GitHub',
    enabled: true,
    defaultRole: 'member',
    requireSso: false,
    seatSubscriptionId: null,
    roleClaim: null,
    roleMap: null,
    issuer: github.origin,
    clientId: github.clientId,
    clientSecret: github.clientSecret,
    scopes: [],
    entryPoint: null,
    idpEntityId: null,
    idpCerts: [],
    domains: [],
    ...overrides,
  };
}

async function departAndSignIn(conn: LoadedConnection, hints: { loginHint?: string } = {}, context = ctx) {
  const state = randomBytes(16).toString('base64url');
  const departure = await githubProtocol.depart(context, conn, state, hints);
  const callback = await signInAtUpstream(departure.url, callbackUrl(context, conn.id), ca);
  const request: SsoRequestState = {
    id: state,
    codeVerifier: departure.codeVerifier ?? null,
    nonce: null,
    samlRequestId: null,
    returnTo: null,
    testedById: null,
  };
  return { departure, callback, request };
}

async function refusal(promise: Promise<unknown>): Promise<SsoSignInError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SsoSignInError);
  return error as SsoSignInError;
}

describe('Sign in with GitHub', () => {
  it('finds the API of github.com and of a GitHub Enterprise Server', () => {
    expect(githubServer(null)).toEqual({ origin: 'https://github.com', api: 'https://api.github.com' });
    expect(githubServer('https://github.com/')).toEqual({
      origin: 'https://github.com',
      api: 'https://api.github.com',
    });
    expect(githubServer('https://ghe.acme.test')).toEqual({
      origin: 'https://ghe.acme.test',
      api: 'https://ghe.acme.test/api/v3',
    });
  });

  it('sends the browser to <origin>/login/oauth/authorize with the state, PKCE S256, the scopes and the callback', async () => {
    const conn = connection();
    const departure = await githubProtocol.depart(ctx, conn, 'the-state', { loginHint: 'octocat' });
    const url = new URL(departure.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${github.origin}/login/oauth/authorize`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: github.clientId,
      redirect_uri: `${TESSERA}/sso/${conn.id}/callback`,
      scope: 'read:user user:email',
      state: 'the-state',
      code_challenge_method: 'S256',
      login: 'octocat',
    });
    expect(departure.codeVerifier).toMatch(/^[\w-]{43,128}$/);
    expect(departure.nonce).toBeUndefined();
    // An address is no GitHub login: it is not passed on.
    expect(
      new URL((await githubProtocol.depart(ctx, conn, 's', { loginHint: 'octocat@acme.test' })).url).searchParams.has(
        'login',
      ),
    ).toBe(false);
  });

  it('signs the person in: the numeric id as the subject, the primary verified address, the name, the claims', async () => {
    github.signInAs('octocat');
    const conn = connection();
    const { callback, request } = await departAndSignIn(conn);
    const asked = github.requests.length;
    const profile = await githubProtocol.arrive(ctx, conn, request, { callbackUrl: callback });
    expect(profile).toEqual({
      subject: '583231',
      email: 'octocat@acme.test',
      emailVerified: true,
      name: 'The Octocat',
      roleValues: [],
      amr: [],
      claims: {
        id: 583231,
        login: 'octocat',
        name: 'The Octocat',
        email: 'octocat@github.test',
        emails: [
          { visibility: null, email: 'octo@old.test', primary: false, verified: true },
          { visibility: null, email: 'octocat@acme.test', primary: true, verified: true },
        ],
      },
    });
    const calls = github.requests.slice(asked);
    const token = calls.find((r) => r.path === '/login/oauth/access_token')!;
    expect(token.headers.accept).toContain('application/json');
    expect(new URLSearchParams(token.body).get('code_verifier')).toBe(request.codeVerifier);
    expect(new URLSearchParams(token.body).get('client_secret')).toBe(github.clientSecret);
    expect(
      calls
        .filter((r) => r.path.startsWith('/api/v3/'))
        .map((r) => [r.path, r.headers.authorization?.split(' ')[0], r.headers['user-agent']]),
    ).toEqual([
      ['/api/v3/user', 'Bearer', expect.any(String)],
      ['/api/v3/user/emails', 'Bearer', expect.any(String)],
    ]);
  });

  it('an unverified primary address is passed on unverified; no name is the login', async () => {
    github.signInAs('hubot');
    const conn = connection();
    const { callback, request } = await departAndSignIn(conn);
    expect(await githubProtocol.arrive(ctx, conn, request, { callbackUrl: callback })).toMatchObject({
      subject: '42',
      email: 'hubot@acme.test',
      emailVerified: false,
      name: 'hubot',
    });
  });

  it('without the user:email scope (/user/emails refused) only the public address, unverified', async () => {
    github.signInAs('octocat');
    const conn = connection();
    const { callback, request } = await departAndSignIn(conn);
    github.override('/api/v3/user/emails', (_req, res) =>
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}'),
    );
    try {
      expect(await githubProtocol.arrive(ctx, conn, request, { callbackUrl: callback })).toMatchObject({
        subject: '583231',
        email: 'octocat@github.test',
        emailVerified: false,
      });
    } finally {
      github.override('/api/v3/user/emails', null);
    }
  });
});

describe('GitHub answers that are refused', () => {
  it("GitHub's own refusal (access_denied) is an idp_error with its words", async () => {
    github.refuse({ error: 'access_denied', error_description: 'The user has denied your application access.' });
    try {
      const conn = connection();
      const { callback, request } = await departAndSignIn(conn);
      expect(await refusal(githubProtocol.arrive(ctx, conn, request, { callbackUrl: callback }))).toMatchObject({
        reason: 'idp_error',
        message:
          'The identity provider refused the sign-in: access_denied (The user has denied your application access.)',
      });
    } finally {
      github.refuse(null);
    }
  });

  it("a code used twice, or with another verifier: GitHub's 200 with an error body is its refusal", async () => {
    github.signInAs('octocat');
    const conn = connection();
    const { callback, request } = await departAndSignIn(conn);
    await githubProtocol.arrive(ctx, conn, request, { callbackUrl: callback });
    expect(await refusal(githubProtocol.arrive(ctx, conn, request, { callbackUrl: callback }))).toMatchObject({
      reason: 'idp_error',
      message:
        'The identity provider refused the sign-in: bad_verification_code (The code passed is incorrect or expired.)',
    });
    const again = await departAndSignIn(conn);
    expect(
      (
        await refusal(
          githubProtocol.arrive(
            ctx,
            conn,
            { ...again.request, codeVerifier: 'y'.repeat(43) },
            { callbackUrl: again.callback },
          ),
        )
      ).message,
    ).toMatch(/bad_verification_code/);
  });

  it('a wrong client secret', async () => {
    github.signInAs('octocat');
    const conn = connection({ clientSecret: 'not-the-secret' });
    const { callback, request } = await departAndSignIn(conn);
    expect((await refusal(githubProtocol.arrive(ctx, conn, request, { callbackUrl: callback }))).message).toMatch(
      /^The identity provider refused the sign-in: incorrect_client_credentials/,
    );
  });

  it("an answer with another state than the sign-in's", async () => {
    github.signInAs('octocat');
    const conn = connection();
    const { callback, request } = await departAndSignIn(conn);
    expect(
      await refusal(githubProtocol.arrive(ctx, conn, { ...request, id: 'another' }, { callbackUrl: callback })),
    ).toMatchObject({
      reason: 'invalid_response',
      message: "The identity provider's answer belongs to another sign-in (state)",
    });
  });

  /** A sign-in whose callback is reached, with `path` answered by hand from then on. */
  async function withAnswer(path: string, answer: (res: ServerResponse) => void, context = ctx) {
    github.signInAs('octocat');
    const conn = connection();
    const { callback, request } = await departAndSignIn(conn);
    const override: Override = (_req, res) => answer(res);
    github.override(path, override);
    try {
      return await githubProtocol.arrive(context, conn, request, { callbackUrl: callback }).then(
        (profile) => ({ profile, error: null }),
        (error: unknown) => ({ profile: null, error }),
      );
    } finally {
      github.override(path, null);
    }
  }

  it('a token endpoint or an API answering garbage, NUL bytes, invalid UTF-8, an error or a huge body', async () => {
    const garbage = (res: ServerResponse) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(randomBytes(200));
    const nul = (res: ServerResponse) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('\u0000{"id":\u0000}');
    const huge = (res: ServerResponse) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(`{"id":1,"login":"${'x'.repeat(2 * 1024 * 1024)}"}`);
    const cases: [string, string, (res: ServerResponse) => void, string][] = [
      ['token garbage', '/login/oauth/access_token', garbage, "The identity provider's answer was not valid"],
      ['token huge', '/login/oauth/access_token', huge, "The identity provider's answer was too large"],
      [
        'token 500',
        '/login/oauth/access_token',
        (res) => res.writeHead(500).end('oops'),
        'The identity provider answered with an error (HTTP 500)',
      ],
      ['user garbage', '/api/v3/user', garbage, "The identity provider's answer was not valid"],
      ['user NUL', '/api/v3/user', nul, "The identity provider's answer was not valid"],
      ['user huge', '/api/v3/user', huge, "The identity provider's answer was too large"],
      [
        'user 502',
        '/api/v3/user',
        (res) => res.writeHead(502).end('bad gateway'),
        'The identity provider did not return the person (HTTP 502)',
      ],
      [
        'user without an id',
        '/api/v3/user',
        (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"1; drop table","login":"x"}'),
        "The identity provider's user id is not usable",
      ],
      [
        'user as a list',
        '/api/v3/user',
        (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('[1,2]'),
        'The identity provider did not return the person',
      ],
      ['emails huge', '/api/v3/user/emails', huge, "The identity provider's answer was too large"],
    ];
    for (const [what, path, answer, message] of cases) {
      const { error } = await withAnswer(path, answer);
      expect(error, what).toBeInstanceOf(SsoSignInError);
      expect((error as SsoSignInError).message, what).toBe(message);
    }
  });

  it('an API answering NUL bytes and invalid UTF-8 inside its strings: the profile and the claims hold text PostgreSQL can store', async () => {
    const { profile, error } = await withAnswer('/api/v3/user', (res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          Buffer.from(
            '{"id": 583231, "login": "octo\\u0000cat", "name": "Octo \xff\\u0000 Cat", "email": "bad\\u0000@acme.test"}',
            'latin1',
          ),
        ),
    );
    expect(error).toBeNull();
    expect(profile).toMatchObject({
      subject: '583231',
      name: 'Octo \uFFFD Cat',
      email: 'octocat@acme.test',
      emailVerified: true,
    });
    expect(JSON.stringify(profile!.claims)).not.toContain('\\u0000');
    await db.$queryRaw`select ${JSON.stringify(profile!.claims)}::jsonb, ${profile!.name}::text`;
  });

  it('emails that are not a list, or entries that are not addresses, give no verified address', async () => {
    for (const body of [
      '{"email":"x@acme.test","primary":true,"verified":true}',
      '[{"email":"no-at-sign","primary":true,"verified":true}, 7, null]',
    ]) {
      const { profile } = await withAnswer('/api/v3/user/emails', (res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(body),
      );
      expect(profile).toMatchObject({ email: 'octocat@github.test', emailVerified: false });
    }
  });

  it('a server at a private address while private networks are not allowed: nothing is asked of it', async () => {
    github.signInAs('octocat');
    const conn = connection();
    const { callback, request } = await departAndSignIn(conn);
    const asked = github.requests.length;
    expect(
      await refusal(
        githubProtocol.arrive(contextWith({ allowPrivateNetworks: false }), conn, request, { callbackUrl: callback }),
      ),
    ).toMatchObject({ reason: 'idp_error', message: 'The identity provider could not be reached' });
    expect(github.requests.length).toBe(asked);
  });

  it('a server that does not answer in time', async () => {
    const started = performance.now();
    const { error } = await withAnswer('/api/v3/user', () => {}, contextWith({ timeoutMs: 300 }));
    expect(error).toMatchObject({ reason: 'idp_error', message: 'The identity provider could not be reached' });
    expect(performance.now() - started).toBeLessThan(3_000);
  });
});
