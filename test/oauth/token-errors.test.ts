// Negative cases of POST /oauth/token, after the OpenID Foundation's Basic OP plan: single-use and expiring
// codes, PKCE, client_secret_post only, codes and refresh tokens bound to their client, grant types, and
// malformed bodies. Errors are {error, error_description}; 400, or 401 with WWW-Authenticate for invalid_client.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { client as restClient, type Client } from '../helpers/http.ts';
import { PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { movableClock } from '../helpers/clock.ts';
import {
  authorize,
  codeFrom,
  registerClient,
  startWithSignedInMember,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://app.example.test/callback';
const OTHER_REDIRECT = 'https://app.example.test/other';

const clock = movableClock();
let server: TestServer;
let admin: Client;
let tenant: Tenant;
/** A session token of tenant.member, sent as the portal's cookie. */
let session: string;
let app: RegisteredClient;
let other: RegisteredClient;

/** A client of the tenant with both redirect URIs, registered by the platform admin, that skips consent. */
const registerApp = (body: Record<string, unknown> = {}) =>
  registerClient(admin, {
    name: 'Relying party',
    redirect_uris: [REDIRECT, OTHER_REDIRECT],
    allowed_scopes: ['openid', 'profile', 'email'],
    consent_required: false,
    organization_id: tenant.id,
    ...body,
  });

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember({ clock }));
  app = await registerApp();
  other = await registerApp({ name: 'Another relying party' });
});
afterAll(() => server?.stop());

/** Runs the authorization endpoint as the signed-in member and returns the code from the redirect. */
async function authorizeCode(c: RegisteredClient = app, extra: Record<string, string> = {}): Promise<string> {
  const location = await authorize(server.url, session, {
    client_id: c.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid profile',
    state: randomBytes(6).toString('hex'),
    nonce: randomBytes(6).toString('hex'),
    ...extra,
  });
  return codeFrom(location);
}

interface TokenReply {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** POST /oauth/token with a form body (the OAuth norm), or a raw body and content type. */
async function token(
  params: Record<string, string> | null,
  options: { raw?: string; contentType?: string | null; headers?: Record<string, string>; method?: string } = {},
): Promise<TokenReply> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  const contentType = options.contentType === undefined ? 'application/x-www-form-urlencoded' : options.contentType;
  if (contentType) headers['content-type'] = contentType;
  const body = options.raw ?? (params ? new URLSearchParams(params).toString() : undefined);
  const res = await fetch(`${server.url}/oauth/token`, { method: options.method ?? 'POST', headers, body });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON; the assertions say so
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

const exchange = (code: string, c: RegisteredClient = app, extra: Record<string, string> = {}) =>
  token({
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT,
    client_id: c.client_id,
    client_secret: c.client_secret,
    ...extra,
  });

const refresh = (refreshToken: string, c: RegisteredClient = app) =>
  token({
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: c.client_id,
    client_secret: c.client_secret,
  });

const userinfo = (accessToken: string) => restClient(server.url, { token: accessToken }).get('/oauth/userinfo');

function expectTokens(reply: TokenReply) {
  expect(reply.status, reply.text).toBe(200);
  expect(reply.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
  expect(typeof reply.body.access_token).toBe('string');
  expect(reply.headers.get('cache-control')).toContain('no-store');
}

/** An OAuth error body with exactly error and error_description, the status, and no-store. */
function expectError(reply: TokenReply, status: number, error: string, description?: string) {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(reply.body).sort()).toEqual(['error', 'error_description']);
  expect(reply.body.error).toBe(error);
  expect(typeof reply.body.error_description).toBe('string');
  if (description !== undefined) expect(reply.body.error_description).toBe(description);
  expect(reply.headers.get('cache-control')).toContain('no-store');
  if (status === 401) expect(reply.headers.get('www-authenticate')).toBeTruthy();
}

const challengeOf = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');
const newVerifier = () => randomBytes(32).toString('base64url');

describe('a code used twice', () => {
  it('answers invalid_grant "Authorization code has expired" and ends the tokens of the first exchange', async () => {
    const code = await authorizeCode();
    const first = await exchange(code);
    expectTokens(first);
    expect(first.body.refresh_token).toBeTruthy();
    expect((await userinfo(first.body.access_token)).status).toBe(200);

    expectError(await exchange(code), 400, 'invalid_grant', 'Authorization code has expired');

    const info = await userinfo(first.body.access_token);
    expect(info.status).toBe(401);
    expect(info.body.error).toBe('invalid_token');
    expectError(await refresh(first.body.refresh_token), 400, 'invalid_grant');
  });
});

describe('PKCE at the token endpoint', () => {
  it('a wrong verifier: invalid_grant (the right one works on another code)', async () => {
    const verifier = newVerifier();
    const code = await authorizeCode(app, { code_challenge: challengeOf(verifier), code_challenge_method: 'S256' });
    expectError(await exchange(code, app, { code_verifier: newVerifier() }), 400, 'invalid_grant');

    const good = await authorizeCode(app, { code_challenge: challengeOf(verifier), code_challenge_method: 'S256' });
    expectTokens(await exchange(good, app, { code_verifier: verifier }));
  });

  it('a missing verifier when a challenge was used: invalid_grant', async () => {
    const code = await authorizeCode(app, {
      code_challenge: challengeOf(newVerifier()),
      code_challenge_method: 'S256',
    });
    expectError(await exchange(code), 400, 'invalid_grant');
  });

  it('the S256 challenge itself sent as the verifier: invalid_grant', async () => {
    const challenge = challengeOf(newVerifier());
    const code = await authorizeCode(app, { code_challenge: challenge, code_challenge_method: 'S256' });
    expectError(await exchange(code, app, { code_verifier: challenge }), 400, 'invalid_grant');
  });

  it('a verifier when no challenge was used: invalid_grant', async () => {
    const code = await authorizeCode();
    expectError(await exchange(code, app, { code_verifier: newVerifier() }), 400, 'invalid_grant');
  });

  it('plain: the verifier equal to the challenge works, another does not', async () => {
    const verifier = newVerifier();
    const code = await authorizeCode(app, { code_challenge: verifier, code_challenge_method: 'plain' });
    expectTokens(await exchange(code, app, { code_verifier: verifier }));
    const again = await authorizeCode(app, { code_challenge: verifier, code_challenge_method: 'plain' });
    expectError(await exchange(again, app, { code_verifier: newVerifier() }), 400, 'invalid_grant');
  });
});

describe('client authentication (client_secret_post only)', () => {
  it('a wrong client secret: 401 invalid_client with WWW-Authenticate', async () => {
    const code = await authorizeCode();
    const reply = await exchange(code, { ...app, client_secret: `${app.client_secret}x` });
    expectError(reply, 401, 'invalid_client');
  });

  it('a missing client secret: 401 invalid_client', async () => {
    const code = await authorizeCode();
    expectError(
      await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: app.client_id }),
      401,
      'invalid_client',
    );
  });

  it('an unknown client: 401 invalid_client "Client not found"', async () => {
    const code = await authorizeCode();
    expectError(
      await exchange(code, { ...app, client_id: 'tsc_nosuchclient' }),
      401,
      'invalid_client',
      'Client not found',
    );
  });

  it('credentials in an HTTP Basic Authorization header are refused, even correct ones', async () => {
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(app.client_id)}:${encodeURIComponent(app.client_secret)}`).toString('base64')}`;
    const code = await authorizeCode();
    const headerOnly = await token(
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT },
      { headers: { authorization: basic } },
    );
    expectError(headerOnly, 401, 'invalid_client');
    const both = await token(
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        client_id: app.client_id,
        client_secret: app.client_secret,
      },
      { headers: { authorization: basic } },
    );
    expectError(both, 401, 'invalid_client');
    // the refused requests did not consume the code
    expectTokens(await exchange(code));
  });

  it('a disabled client: 401 invalid_client "Client not found"', async () => {
    const doomed = await registerApp({ name: 'Soon disabled' });
    const code = await authorizeCode(doomed);
    expect((await admin.patch(`/api/v1/oauth-clients/${doomed.id}`, { enabled: false })).status).toBe(200);
    expectError(await exchange(code, doomed), 401, 'invalid_client', 'Client not found');
  });
});

describe('code expiry (5 minutes)', () => {
  it('at 4 minutes 59 seconds the code still works', async () => {
    const code = await authorizeCode();
    clock.advance(4 * 60 + 59);
    expectTokens(await exchange(code));
  });

  it('at 5 minutes and 1 second: invalid_grant "Authorization code has expired"', async () => {
    const code = await authorizeCode();
    clock.advance(5 * 60 + 1);
    expectError(await exchange(code), 400, 'invalid_grant', 'Authorization code has expired');
  });
});

describe('codes and refresh tokens are bound to their request and client', () => {
  it('a redirect_uri different from the authorization request (though registered): invalid_grant', async () => {
    const code = await authorizeCode();
    expectError(await exchange(code, app, { redirect_uri: OTHER_REDIRECT }), 400, 'invalid_grant');
  });

  it('a missing redirect_uri: an error, no tokens', async () => {
    const code = await authorizeCode();
    const reply = await token({
      grant_type: 'authorization_code',
      code,
      client_id: app.client_id,
      client_secret: app.client_secret,
    });
    expect(reply.status).toBe(400);
    expect(['invalid_request', 'invalid_grant']).toContain(reply.body.error);
    expect(reply.body.access_token).toBeUndefined();
  });

  it("client A's code exchanged by client B: invalid_grant", async () => {
    const code = await authorizeCode(app);
    expectError(await exchange(code, other), 400, 'invalid_grant');
  });

  it('a refresh token used by another client: invalid_grant, and it still works for its own client', async () => {
    const tokens = await exchange(await authorizeCode(app));
    expectTokens(tokens);
    expectError(await refresh(tokens.body.refresh_token, other), 400, 'invalid_grant');
    const own = await refresh(tokens.body.refresh_token, app);
    expectTokens(own);
    expect(own.body.refresh_token).toBeTruthy();
    expect(own.body.refresh_token).not.toBe(tokens.body.refresh_token);
  });

  it('an unknown code: invalid_grant', async () => {
    expectError(await exchange('tsa_thisisnotacode'), 400, 'invalid_grant');
  });
});

describe('grant types', () => {
  it('an unsupported grant_type: unsupported_grant_type', async () => {
    const reply = await token({
      grant_type: 'password',
      username: tenant.member.email,
      password: PASSWORD,
      client_id: app.client_id,
      client_secret: app.client_secret,
    });
    expectError(reply, 400, 'unsupported_grant_type');
  });

  it('a missing grant_type: invalid_request', async () => {
    const code = await authorizeCode();
    expectError(
      await token({ code, redirect_uri: REDIRECT, client_id: app.client_id, client_secret: app.client_secret }),
      400,
      'invalid_request',
    );
  });

  it('refresh_token for a client without that grant: unauthorized_client', async () => {
    const noRefresh = await registerApp({ name: 'Codes only', grant_types: ['authorization_code'] });
    const tokens = await exchange(await authorizeCode(noRefresh), noRefresh);
    expectTokens(tokens);
    expect(tokens.body.refresh_token).toBeUndefined();
    // a refresh token of another client, presented by this one: the grant type is refused first
    const someone = await exchange(await authorizeCode(app));
    expectError(await refresh(someone.body.refresh_token, noRefresh), 400, 'unauthorized_client');
  });

  it('client_credentials asking for openid: invalid_scope', async () => {
    const machine = await registerApp({
      name: 'Machine',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      allowed_scopes: ['openid', 'organization'],
    });
    const ok = await token({
      grant_type: 'client_credentials',
      scope: 'organization',
      client_id: machine.client_id,
      client_secret: machine.client_secret,
    });
    expectTokens(ok);
    const reply = await token({
      grant_type: 'client_credentials',
      scope: 'openid',
      client_id: machine.client_id,
      client_secret: machine.client_secret,
    });
    expectError(reply, 400, 'invalid_scope', 'Requested scope not allowed');
  });

  it('authorization_code for a client_credentials-only client: unauthorized_client', async () => {
    const machine = await registerApp({
      name: 'Machine 2',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      allowed_scopes: ['organization'],
    });
    const reply = await token({
      grant_type: 'authorization_code',
      code: 'tsa_whatever',
      redirect_uri: REDIRECT,
      client_id: machine.client_id,
      client_secret: machine.client_secret,
    });
    expectError(reply, 400, 'unauthorized_client');
  });
});

describe('malformed requests: a 4xx JSON error, never a 5xx', () => {
  it('text/plain body: 4xx {error, error_description}', async () => {
    const reply = await token(null, {
      raw: `grant_type=client_credentials&client_id=${app.client_id}&client_secret=${app.client_secret}`,
      contentType: 'text/plain',
    });
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.status).toBeLessThan(500);
    expect(reply.body).toEqual({ error: expect.any(String), error_description: expect.any(String) });
    expect(reply.headers.get('cache-control')).toContain('no-store');
  });

  it('invalid JSON: 400 invalid_request', async () => {
    const reply = await token(null, { raw: '{"grant_type": "authorization_code", ', contentType: 'application/json' });
    expectError(reply, 400, 'invalid_request');
  });

  it('a JSON array instead of an object: 400 invalid_request', async () => {
    const reply = await token(null, { raw: '["grant_type"]', contentType: 'application/json' });
    expectError(reply, 400, 'invalid_request');
  });

  it('an empty form body: 400 invalid_request', async () => {
    expectError(await token(null, { raw: '' }), 400, 'invalid_request');
  });

  it('no body and no content type: 400 invalid_request', async () => {
    expectError(await token(null, { contentType: null }), 400, 'invalid_request');
  });

  it('a huge body: 413 {error, error_description}', async () => {
    const reply = await token(null, { raw: `grant_type=authorization_code&code=${'a'.repeat(200_000)}` });
    expect(reply.status).toBe(413);
    expect(reply.body).toEqual({ error: expect.any(String), error_description: expect.any(String) });
  });

  it('a parameter given twice: 400 invalid_request', async () => {
    const raw = `grant_type=authorization_code&grant_type=refresh_token&client_id=${app.client_id}&client_secret=${app.client_secret}`;
    expectError(await token(null, { raw }), 400, 'invalid_request');
  });

  it('parameter names with dots or brackets are names, not nesting: unknown ones are ignored (RFC 6749 3.2)', async () => {
    const code = await authorizeCode();
    const raw =
      `${new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: app.client_id, client_secret: app.client_secret })}` +
      '&ext.version=2&resource%5B0%5D=https%3A%2F%2Fapi.example.test&__proto__=x';
    expectTokens(await token(null, { raw }));
  });

  it('a form of more than 1000 parameters: 400 invalid_request', async () => {
    const raw = `grant_type=authorization_code&${Array.from({ length: 1000 }, (_, i) => `p${i}=`).join('&')}`;
    expectError(await token(null, { raw }), 400, 'invalid_request', 'The body has more than 1000 parameters');
  });

  it('a parameter given twice in a form with other fields between: 400 invalid_request', async () => {
    const raw = `client_id=${app.client_id}&grant_type=authorization_code&client_secret=${app.client_secret}&client_id=${app.client_id}`;
    expectError(await token(null, { raw }), 400, 'invalid_request');
  });

  it('JSON parameters of the wrong type: 400, not 500', async () => {
    const reply = await token(null, {
      raw: JSON.stringify({
        grant_type: 'authorization_code',
        code: { $ne: null },
        redirect_uri: [REDIRECT],
        client_id: app.client_id,
        client_secret: app.client_secret,
      }),
      contentType: 'application/json',
    });
    expectError(reply, 400, 'invalid_request');
  });

  it('a JSON body is accepted (control)', async () => {
    const code = await authorizeCode();
    const reply = await token(null, {
      raw: JSON.stringify({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        client_id: app.client_id,
        client_secret: app.client_secret,
      }),
      contentType: 'application/json',
    });
    expectTokens(reply);
  });

  it('GET /oauth/token: 405 with Allow: POST', async () => {
    const reply = await token(null, { method: 'GET', contentType: null });
    expect(reply.status).toBe(405);
    expect(reply.body).toEqual({ error: expect.any(String), error_description: expect.any(String) });
    expect(reply.headers.get('allow')).toBe('POST');
  });
});

describe('Cache-Control: no-store', () => {
  it('on token responses and on token errors', async () => {
    const ok = await exchange(await authorizeCode());
    expectTokens(ok);
    expect(ok.headers.get('cache-control')).toBe('no-store');
    const bad = await exchange('tsa_notacode');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('cache-control')).toBe('no-store');
    const unauthenticated = await exchange('tsa_notacode', { ...app, client_secret: 'wrong' });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('cache-control')).toBe('no-store');
  });
});
