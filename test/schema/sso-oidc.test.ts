// OpenID Connect as a connection's protocol (schema/modules/sso/oidc.protocol.ts), against a real provider
// (oidc-provider over HTTPS, test/helpers/oidc-upstream.ts): depart builds the authorization request (PKCE S256,
// nonce, state, scope, login_hint), the test's browser signs in at the provider, and arrive checks the answer and the
// ID token (signature, iss, aud, exp, nonce) and reads the person. Every refusal is an SsoSignInError with a reason and
// a message safe to show; every call goes through the webhook address guard.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../schema/db.ts';
import { makeContext, type Context, type ContextBase } from '../../schema/context.ts';
import { systemClock } from '../../schema/lib/clock.ts';
import type { HostResolver, WebhookSettings } from '../../schema/push/destination.ts';
import { callbackUrl, type LoadedConnection, type SsoRequestState } from '../../schema/modules/sso/protocol.ts';
import { discoverIssuer, oidcProtocol } from '../../schema/modules/sso/oidc.protocol.ts';
import { IssuerUnreachableError, SsoSignInError } from '../../schema/modules/sso/sso.errors.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { signInAtUpstream, startOidcUpstream, type OidcUpstream } from '../helpers/oidc-upstream.ts';

let database: TestDatabase;
let db: Db;
let ca: TestCa;
let upstream: OidcUpstream;
let ctx: Context;
const receivers: HttpsReceiver[] = [];

/** Every test host is this machine. */
const resolve: HostResolver = async () => [{ address: '127.0.0.1', family: 4 }];
const TESSERA = 'https://tessera.test';

/** A context as a request's: its own guard settings (a fresh object: openid-client's configurations are kept per settings). */
function contextWith(webhooks: Partial<WebhookSettings> = {}): Context {
  const settings = {
    issuer: () => TESSERA,
    secretKey: randomBytes(32),
    production: false,
    webhooks: { timeoutMs: 5_000, allowPrivateNetworks: true, ca: ca.caPem, resolve, ...webhooks },
  };
  return makeContext({ db, clock: systemClock, settings } as unknown as ContextBase, null, {
    requestId: 'sso-oidc',
    ip: null,
    userAgent: null,
  });
}

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url, { maxConnections: 2 });
  ca = makeTestCa(['idp.test', 'localhost']);
  upstream = await startOidcUpstream(ca);
  upstream.addAccount({
    sub: 'ada',
    email: 'ada@acme.test',
    email_verified: true,
    name: 'Ada Lovelace',
    groups: ['engineering', 'admins'],
    amr: ['pwd', 'mfa'],
  });
  upstream.addAccount({
    sub: 'bob',
    email: 'bob@acme.test',
    email_verified: false,
    name: 'Bob',
    groups: 'staff' as unknown as string[],
  });
  ctx = contextWith();
});
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  await upstream?.close();
  ca?.remove();
  await db?.$disconnect();
  await database?.drop();
});

function connectionTo(
  target: { issuer: string; clientId: string; clientSecret: string; redirectUris: Set<string> },
  overrides: Partial<LoadedConnection> = {},
): LoadedConnection {
  const connection: LoadedConnection = {
    id: randomUUID(),
    organizationId: randomUUID(),
    type: 'oidc',
    name: 'Acme IdP',
    enabled: true,
    defaultRole: 'member',
    requireSso: false,
    seatSubscriptionId: null,
    roleClaim: 'groups',
    roleMap: null,
    issuer: target.issuer,
    clientId: target.clientId,
    clientSecret: target.clientSecret,
    scopes: ['openid', 'email', 'profile', 'groups'],
    entryPoint: null,
    idpEntityId: null,
    idpCerts: [],
    domains: ['acme.test'],
    ...overrides,
  };
  target.redirectUris.add(callbackUrl(ctx, connection.id));
  return connection;
}

/** depart, then the browser's trip through the provider's sign-in: the callback URL it lands on, and the request. */
async function departAndSignIn(connection: LoadedConnection, hints: { loginHint?: string } = {}, context = ctx) {
  const state = randomBytes(16).toString('base64url');
  const departure = await oidcProtocol.depart(context, connection, state, hints);
  const callback = await signInAtUpstream(departure.url, callbackUrl(context, connection.id), ca);
  const request: SsoRequestState = {
    id: state,
    codeVerifier: departure.codeVerifier ?? null,
    nonce: departure.nonce ?? null,
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

describe('OpenID Connect sign-in', () => {
  it('sends the browser to the issuer with PKCE S256, a nonce, the state, the scopes, the hint and the callback', async () => {
    const connection = connectionTo(upstream);
    const departure = await oidcProtocol.depart(ctx, connection, 'the-state', { loginHint: 'ada@acme.test' });
    const url = new URL(departure.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${upstream.issuer}/auth`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: upstream.clientId,
      response_type: 'code',
      redirect_uri: `${TESSERA}/sso/${connection.id}/callback`,
      scope: 'openid email profile groups',
      state: 'the-state',
      nonce: departure.nonce,
      code_challenge_method: 'S256',
      login_hint: 'ada@acme.test',
    });
    expect(departure.codeVerifier).toMatch(/^[\w-]{43,128}$/);
    expect(url.searchParams.get('code_challenge')).not.toBe(departure.codeVerifier);
    expect(departure.nonce).toMatch(/^[\w-]{20,}$/);
  });

  it('asks for openid email profile when the connection names no scopes, and openid always', async () => {
    expect(
      new URL((await oidcProtocol.depart(ctx, connectionTo(upstream, { scopes: [] }), 's', {})).url).searchParams.get(
        'scope',
      ),
    ).toBe('openid email profile');
    expect(
      new URL(
        (await oidcProtocol.depart(ctx, connectionTo(upstream, { scopes: ['email'] }), 's', {})).url,
      ).searchParams.get('scope'),
    ).toBe('openid email');
  });

  it("signs the person in: subject, verified e-mail, name, the role claim's values, amr and the claims", async () => {
    upstream.signInAs('ada');
    const connection = connectionTo(upstream);
    const { callback, request } = await departAndSignIn(connection);
    expect(callback).toMatch(new RegExp(`^${TESSERA}/sso/${connection.id}/callback\\?code=`));
    const asked = upstream.requests.length;
    const profile = await oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback });
    expect(profile).toMatchObject({
      subject: 'ada',
      email: 'ada@acme.test',
      emailVerified: true,
      name: 'Ada Lovelace',
      roleValues: ['engineering', 'admins'],
      amr: ['pwd', 'mfa'],
    });
    expect(profile.claims).toMatchObject({
      sub: 'ada',
      iss: upstream.issuer,
      aud: upstream.clientId,
      nonce: request.nonce,
      email: 'ada@acme.test',
      groups: ['engineering', 'admins'],
    });
    // Everything was in the ID token: the userinfo endpoint was not asked.
    expect(upstream.requests.slice(asked).map((p) => p.split('?')[0])).not.toContain('/me');
  });

  it('signs in the account login_hint names; a role claim that is one string is one value; an unverified address stays unverified', async () => {
    upstream.signInAs('ada');
    const connection = connectionTo(upstream);
    const { callback, request } = await departAndSignIn(connection, { loginHint: 'bob@acme.test' });
    const profile = await oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback });
    expect(profile).toMatchObject({
      subject: 'bob',
      email: 'bob@acme.test',
      emailVerified: false,
      name: 'Bob',
      roleValues: ['staff'],
      amr: [],
    });
  });

  it('reads the e-mail and the role claim from the userinfo endpoint when the ID token leaves them out', async () => {
    upstream.signInAs('ada');
    upstream.misbehave({ dropClaims: ['email', 'email_verified', 'name', 'groups'] });
    try {
      const connection = connectionTo(upstream);
      const { callback, request } = await departAndSignIn(connection);
      const asked = upstream.requests.length;
      const profile = await oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback });
      expect(profile).toMatchObject({
        subject: 'ada',
        email: 'ada@acme.test',
        emailVerified: true,
        name: 'Ada Lovelace',
        roleValues: ['engineering', 'admins'],
      });
      expect(upstream.requests.slice(asked).map((p) => p.split('?')[0])).toContain('/me');
    } finally {
      upstream.misbehave(null);
    }
  });

  it('reads no role when the connection names no role claim', async () => {
    upstream.signInAs('ada');
    const connection = connectionTo(upstream, { roleClaim: null });
    const { callback, request } = await departAndSignIn(connection);
    expect((await oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback })).roleValues).toEqual([]);
  });

  it('authenticates with client_secret_post at an issuer that supports only that', async () => {
    const postOnly = await startOidcUpstream(ca, { clientAuthMethods: ['client_secret_post'] });
    try {
      postOnly.addAccount({ sub: 'carol', email: 'carol@acme.test', email_verified: true, name: 'Carol' });
      const connection = connectionTo(postOnly);
      const { callback, request } = await departAndSignIn(connection);
      expect((await oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback })).subject).toBe('carol');
    } finally {
      await postOnly.close();
    }
  });
});

describe('OpenID Connect answers that are refused', () => {
  async function misbehaving(misbehaviour: Parameters<OidcUpstream['misbehave']>[0]) {
    upstream.signInAs('ada');
    const connection = connectionTo(upstream);
    const { callback, request } = await departAndSignIn(connection);
    upstream.misbehave(misbehaviour);
    try {
      return await refusal(oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback }));
    } finally {
      upstream.misbehave(null);
    }
  }

  it('an ID token signed with a key the issuer does not publish', async () => {
    const error = await misbehaving({ signWithOtherKey: true });
    expect(error.reason).toBe('invalid_response');
    expect(error.message).toBe("The identity provider's token was not valid (signature)");
  });

  it('an ID token that names another issuer', async () => {
    const error = await misbehaving({ claims: { iss: 'https://evil.test' } });
    expect(error.reason).toBe('invalid_response');
    expect(error.message).toBe("The identity provider's token came from another issuer");
  });

  it('an ID token for another sign-in (another nonce)', async () => {
    const error = await misbehaving({ claims: { nonce: 'another-nonce' } });
    expect(error.reason).toBe('invalid_response');
    expect(error.message).toBe("The identity provider's token nonce did not match this sign-in");
  });

  it('an ID token for another client (audience)', async () => {
    const error = await misbehaving({ claims: { aud: 'another-client' } });
    expect(error).toMatchObject({
      reason: 'invalid_response',
      message: "The identity provider's token was meant for another client (audience)",
    });
  });

  it('an ID token that has expired', async () => {
    const error = await misbehaving({ claims: { exp: Math.floor(Date.now() / 1000) - 3600 } });
    expect(error).toMatchObject({
      reason: 'invalid_response',
      message: "The identity provider's token has expired or is not yet valid",
    });
  });

  it('a subject with a NUL, or longer than 255 characters', async () => {
    for (const sub of ['ada\u0000', 'a'.repeat(256)]) {
      const error = await misbehaving({ claims: { sub } });
      expect(error).toMatchObject({
        reason: 'invalid_response',
        message: "The identity provider's subject identifier is not usable",
      });
    }
  });

  it("an answer with another state than the sign-in's", async () => {
    upstream.signInAs('ada');
    const connection = connectionTo(upstream);
    const { callback, request } = await departAndSignIn(connection);
    const error = await refusal(
      oidcProtocol.arrive(ctx, connection, { ...request, id: 'another-state' }, { callbackUrl: callback }),
    );
    expect(error).toMatchObject({
      reason: 'invalid_response',
      message: "The identity provider's answer belongs to another sign-in (state)",
    });
  });

  it('an answer whose iss parameter (RFC 9207) names another issuer', async () => {
    upstream.signInAs('ada');
    const connection = connectionTo(upstream);
    const { callback, request } = await departAndSignIn(connection);
    const forged = new URL(callback);
    expect(forged.searchParams.get('iss')).toBe(upstream.issuer);
    forged.searchParams.set('iss', 'https://evil.test');
    const error = await refusal(oidcProtocol.arrive(ctx, connection, request, { callbackUrl: forged.href }));
    expect(error).toMatchObject({
      reason: 'invalid_response',
      message: "The identity provider's answer came from another issuer",
    });
  });

  it('a code used a second time: the issuer refuses it', async () => {
    upstream.signInAs('ada');
    const connection = connectionTo(upstream);
    const { callback, request } = await departAndSignIn(connection);
    await oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback });
    const error = await refusal(oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback }));
    expect(error.reason).toBe('idp_error');
    expect(error.message).toMatch(/^The identity provider refused the sign-in: invalid_grant/);
  });

  it('another PKCE verifier than the one the challenge was made from', async () => {
    upstream.signInAs('ada');
    const connection = connectionTo(upstream);
    const { callback, request } = await departAndSignIn(connection);
    const error = await refusal(
      oidcProtocol.arrive(ctx, connection, { ...request, codeVerifier: 'x'.repeat(43) }, { callbackUrl: callback }),
    );
    expect(error.message).toMatch(/^The identity provider refused the sign-in: invalid_grant/);
  });

  it("the provider's own refusal (access_denied) is an idp_error that carries its words", async () => {
    upstream.refuse({ error: 'access_denied', error_description: 'The person declined' });
    try {
      const connection = connectionTo(upstream);
      const { callback, request } = await departAndSignIn(connection);
      expect(new URL(callback).searchParams.get('error')).toBe('access_denied');
      const error = await refusal(oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback }));
      expect(error).toMatchObject({
        reason: 'idp_error',
        message: 'The identity provider refused the sign-in: access_denied (The person declined)',
      });
    } finally {
      upstream.refuse(null);
    }
  });

  it("a refusal's words are shown without control characters, bidi overrides or ill-formed text, and capped", async () => {
    const connection = connectionTo(upstream);
    const departure = await oidcProtocol.depart(ctx, connection, 'st', {});
    const request: SsoRequestState = {
      id: 'st',
      codeVerifier: departure.codeVerifier!,
      nonce: departure.nonce!,
      samlRequestId: null,
      returnTo: null,
      testedById: null,
    };
    const callback = new URL(callbackUrl(ctx, connection.id));
    callback.search = new URLSearchParams({
      state: 'st',
      iss: upstream.issuer,
      error: 'access_denied\u0000\u001b[31m',
      error_description: `no\u0000 way\u202e\ud800 ${'x'.repeat(5000)}`,
    }).toString();
    const error = await refusal(oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback.href }));
    expect(error.reason).toBe('idp_error');
    expect(error.message).not.toMatch(/[\u0000-\u001f\u007f\u202e]/);
    expect(error.message.isWellFormed()).toBe(true);
    expect(error.message.length).toBeLessThan(350);
    expect(error.message).toMatch(
      /^The identity provider refused the sign-in: access_denied \[31m \(no way \uFFFD x+\)$/,
    );
  });

  it('an answer without code or state', async () => {
    const connection = connectionTo(upstream);
    const request: SsoRequestState = {
      id: 'st',
      codeVerifier: 'v'.repeat(43),
      nonce: 'n',
      samlRequestId: null,
      returnTo: null,
      testedById: null,
    };
    for (const callbackUrl of [
      undefined,
      'not a url at all \u0000',
      `${TESSERA}/sso/x/callback`,
      `${TESSERA}/sso/x/callback?state=st&iss=${encodeURIComponent(upstream.issuer)}`,
    ]) {
      expect((await refusal(oidcProtocol.arrive(ctx, connection, request, { callbackUrl }))).reason).toBe(
        'invalid_response',
      );
    }
  });
});

describe('OpenID Connect providers that answer badly', () => {
  /** An issuer that is a bare HTTPS receiver answering as `answer` says. */
  async function fakeIssuer(answer: Parameters<typeof startHttpsReceiver>[1]) {
    const receiver = await startHttpsReceiver(ca, answer);
    receivers.push(receiver);
    return { receiver, issuer: receiver.url('idp.test', '') };
  }

  it("a discovery document that is garbage, NUL bytes, invalid UTF-8, not JSON, or another issuer's", async () => {
    const bodies: [string, Buffer | string, RegExp][] = [
      ['application/json', Buffer.from([0x7b, 0x00, 0x00, 0xff, 0xfe, 0x22]), /discovery document .* is not valid/],
      ['application/json', Buffer.from('{"issuer": "\xff\xfe"}', 'latin1'), /is not valid/],
      ['text/html', '<html>hello</html>', /is not valid/],
      ['application/json', '{"issuer": "https://evil.test"}', /names another issuer \(https:\/\/evil.test\)/],
    ];
    for (const [type, body, problem] of bodies) {
      const { issuer } = await fakeIssuer((_request, res) => res.writeHead(200, { 'content-type': type }).end(body));
      const error = await discoverIssuer(ctx, issuer).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(IssuerUnreachableError);
      expect((error as Error).message).toMatch(problem);
      expect((error as Error).message).not.toContain('\u0000');
      // A sign-in through it does not leave Tessera.
      const refused = await refusal(
        oidcProtocol.depart(
          ctx,
          connectionTo({ issuer, clientId: 'c', clientSecret: 's', redirectUris: new Set() }),
          'st',
          {},
        ),
      );
      expect(refused).toMatchObject({ reason: 'idp_error', message: 'The identity provider could not be reached' });
    }
  });

  it('a discovery document past 1 MiB: the answer is dropped, not read to the end', async () => {
    const { issuer } = await fakeIssuer((_request, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`{"issuer": "${'x'.repeat(2 * 1024 * 1024)}`);
      res.end('"}');
    });
    await expect(discoverIssuer(ctx, issuer)).rejects.toThrow(/answered with more than 1048576 bytes/);
    expect(
      await refusal(
        oidcProtocol.depart(
          ctx,
          connectionTo({ issuer, clientId: 'c', clientSecret: 's', redirectUris: new Set() }),
          'st',
          {},
        ),
      ),
    ).toMatchObject({ reason: 'invalid_response', message: "The identity provider's answer was too large" });
  });

  it('a redirect is not followed', async () => {
    const target = await fakeIssuer(200);
    const { issuer } = await fakeIssuer((_request, res) =>
      res.writeHead(302, { location: target.receiver.url('idp.test', '/.well-known/openid-configuration') }).end(),
    );
    await expect(discoverIssuer(ctx, issuer)).rejects.toThrow(/its discovery document answered HTTP 302/);
    expect(target.receiver.received).toHaveLength(0);
  });

  it('an issuer that does not answer in time', async () => {
    const { issuer } = await fakeIssuer('hang');
    const started = performance.now();
    await expect(discoverIssuer(contextWith({ timeoutMs: 300 }), issuer)).rejects.toThrow(
      /gave no answer within 300 ms/,
    );
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('an issuer at a private address while private networks are not allowed, and one that is not https', async () => {
    const closed = contextWith({ allowPrivateNetworks: false });
    await expect(discoverIssuer(closed, upstream.issuer)).rejects.toThrow(
      /resolves to a private, loopback, link-local or reserved address/,
    );
    await expect(discoverIssuer(closed, `https://127.0.0.1:${upstream.port}`)).rejects.toThrow(/private/);
    const requested = upstream.requests.length;
    expect(await refusal(oidcProtocol.depart(closed, connectionTo(upstream), 'st', {}))).toMatchObject({
      reason: 'idp_error',
      message: 'The identity provider could not be reached',
    });
    expect(upstream.requests.length).toBe(requested);
    await expect(discoverIssuer(ctx, `http://idp.test:${upstream.port}`)).rejects.toThrow(/must be an https URL/);
    await expect(discoverIssuer(ctx, 'not a url')).rejects.toThrow(/not a URL/);
  });

  it('an issuer whose certificate Tessera does not trust', async () => {
    await expect(discoverIssuer(contextWith({ ca: undefined }), upstream.issuer)).rejects.toThrow(
      /could not be reached: idp\.test:\d+: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/,
    );
  });

  it('discovers a working issuer and says what it found', async () => {
    const metadata = await discoverIssuer(ctx, upstream.issuer);
    expect(metadata).toMatchObject({
      issuer: upstream.issuer,
      authorization_endpoint: `${upstream.issuer}/auth`,
      token_endpoint: `${upstream.issuer}/token`,
      jwks_uri: `${upstream.issuer}/jwks`,
    });
  });

  /** A sign-in whose callback is reached, with `path` answered by hand from then on. */
  async function withAnswer(
    path: string,
    answer: Parameters<OidcUpstream['override']>[1],
    misbehaviour: Parameters<OidcUpstream['misbehave']>[0] = null,
  ) {
    upstream.signInAs('ada');
    const connection = connectionTo(upstream);
    const { callback, request } = await departAndSignIn(connection);
    upstream.override(path, answer);
    upstream.misbehave(misbehaviour);
    try {
      return await oidcProtocol.arrive(ctx, connection, request, { callbackUrl: callback }).then(
        (profile) => ({ profile, error: null }),
        (error: unknown) => ({ profile: null, error }),
      );
    } finally {
      upstream.override(path, null);
      upstream.misbehave(null);
    }
  }

  it('a token endpoint answering garbage, NUL bytes, invalid UTF-8, an HTML error page or a huge body', async () => {
    const answers: [string, (res: import('node:http').ServerResponse) => void, string][] = [
      [
        'garbage',
        (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(randomBytes(300)),
        "The identity provider's answer was not valid",
      ],
      [
        'NUL bytes',
        (res) =>
          res.writeHead(200, { 'content-type': 'application/json' }).end('\u0000\u0000{"access_token":"\u0000"}'),
        "The identity provider's answer was not valid",
      ],
      [
        'invalid UTF-8',
        (res) =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(Buffer.from('{"access_token": "\xff", "token_type": "bearer", "id_token": "\xc3("}', 'latin1')),
        "The identity provider's answer was not valid",
      ],
      [
        'an error page',
        (res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>'),
        'The identity provider answered with an error (HTTP 502)',
      ],
      [
        'a huge body',
        (res) =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(`{"access_token":"${'a'.repeat(3 * 1024 * 1024)}"}`),
        "The identity provider's answer was too large",
      ],
    ];
    for (const [what, answer, message] of answers) {
      const { error } = await withAnswer('/token', (req, res) => {
        req.resume();
        req.on('end', () => answer(res));
      });
      expect(error, what).toBeInstanceOf(SsoSignInError);
      expect((error as SsoSignInError).message, what).toBe(message);
    }
  });

  it('a userinfo endpoint answering NUL bytes and invalid UTF-8 in its claims: the profile and the claims hold text PostgreSQL can store', async () => {
    const { profile, error } = await withAnswer(
      '/me',
      (_req, res) => {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(
            Buffer.concat([
              Buffer.from(
                '{"sub": "ada", "email": "ada@acme.test", "email_verified": true, "name": "Ada\\u0000 \xff Lovelace", "groups": ["eng\\u0000", 7, "ops"], "extra\\u0000": "\\u0000"}',
                'latin1',
              ),
            ]),
          );
      },
      { dropClaims: ['email', 'email_verified', 'name', 'groups'] },
    );
    expect(error).toBeNull();
    expect(profile).toMatchObject({
      subject: 'ada',
      email: 'ada@acme.test',
      emailVerified: true,
      name: 'Ada \uFFFD Lovelace',
      roleValues: ['eng', 'ops'],
    });
    expect(JSON.stringify(profile!.claims)).not.toContain('\\u0000');
    // What PostgreSQL would refuse it takes.
    await db.$queryRaw`select ${JSON.stringify(profile!.claims)}::jsonb, ${profile!.name}::text`;
  });

  it('a userinfo endpoint that names another subject', async () => {
    const { error } = await withAnswer(
      '/me',
      (_req, res) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"sub": "mallory", "email": "mallory@acme.test"}'),
      { dropClaims: ['email'] },
    );
    expect(error).toMatchObject({
      reason: 'invalid_response',
      message: "The identity provider's answers did not agree with each other",
    });
  });

  it('a token endpoint that cannot be reached any more', async () => {
    const { error } = await withAnswer('/token', (req, res) => res.socket?.destroy());
    expect(error).toMatchObject({ reason: 'idp_error', message: 'The identity provider could not be reached' });
  });
});
