// Negative cases of GET /oauth/authorize, after the OpenID Foundation's Basic OP plan: errors found before the
// client and its redirect URI are trusted stay on our own error page (no redirect: no open redirect); errors
// after that go back to the client with error, error_description, state and iss.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { addPerson, type Person, type Tenant } from '../helpers/fixtures.ts';
import { browserGet, registerClient, startWithSignedInMember, type RegisteredClient } from '../helpers/oauth.ts';

const REDIRECT = 'https://app.example.test/callback';

let server: TestServer;
let admin: Client;
let tenant: Tenant;
/** A session token of tenant.member, sent as the portal's cookie. */
let session: string;
/** A user of the operator organization only: not a member of the tenant that owns the clients. */
let outsider: Person;
let app: RegisteredClient;
let consentApp: RegisteredClient;

/** A client of the tenant, registered by the platform admin, that skips consent unless `body` says otherwise. */
const registerApp = (body: Record<string, unknown> = {}) =>
  registerClient(admin, {
    name: 'Relying party',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'profile', 'email'],
    consent_required: false,
    organization_id: tenant.id,
    ...body,
  });

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember());
  const operator = (await signIn(server.url, ADMIN.email, ADMIN.password)).login.organization;
  outsider = await addPerson(server.url, admin, operator.id, 'member', 'outsider');
  app = await registerApp();
  consentApp = await registerApp({ name: 'Asks for consent', consent_required: true });
});
afterAll(() => server?.stop());

/** A valid OIDC authorization request of `app`; `overrides` replaces (or with undefined removes) parameters. */
function request(overrides: Record<string, string | undefined> = {}, clientId = app.client_id): URLSearchParams {
  const params: Record<string, string | undefined> = {
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid profile',
    state: `st-${randomBytes(6).toString('hex')}`,
    nonce: `n-${randomBytes(6).toString('hex')}`,
    ...overrides,
  };
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.append(k, v);
  return query;
}

/** GET /oauth/authorize as a browser would, with the session cookie (or none) and without following redirects. */
async function authorize(query: URLSearchParams, cookie: string | null = session) {
  const res = await browserGet(`${server.url}/oauth/authorize?${query}`, cookie);
  return {
    status: res.status,
    location: res.headers.get('location'),
    type: res.headers.get('content-type') ?? '',
    body: await res.text(),
  };
}

/** Asserts a redirect back to the registered URI carrying an error, the request's state and our issuer. */
function expectErrorRedirect(
  reply: Awaited<ReturnType<typeof authorize>>,
  query: URLSearchParams,
  error: string,
  description?: string,
) {
  expect(reply.status, reply.body).toBe(302);
  expect(reply.location).toBeTruthy();
  const url = new URL(reply.location!);
  expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
  expect(url.searchParams.get('error')).toBe(error);
  expect(url.searchParams.get('code')).toBeNull();
  expect(url.searchParams.get('error_description')).toBeTruthy();
  if (description !== undefined) expect(url.searchParams.get('error_description')).toBe(description);
  expect(url.searchParams.get('state')).toBe(query.get('state'));
  expect(url.searchParams.get('iss')).toBe(server.url);
  return url;
}

/** Asserts our own HTML error page: status 400, the message, and no Location header at all. */
function expectErrorPage(reply: Awaited<ReturnType<typeof authorize>>, message: string, code: string) {
  expect(reply.status).toBe(400);
  expect(reply.location).toBeNull();
  expect(reply.type).toMatch(/^text\/html/);
  expect(reply.body).toContain(message);
  expect(reply.body).toContain(code);
}

describe('the well-formed request (control)', () => {
  it('redirects to the client with a code, the state and the issuer', async () => {
    const query = request();
    const reply = await authorize(query);
    expect(reply.status, reply.body).toBe(302);
    const url = new URL(reply.location!);
    expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
    expect(url.searchParams.get('code')).toBeTruthy();
    expect(url.searchParams.get('error')).toBeNull();
    expect(url.searchParams.get('state')).toBe(query.get('state'));
    expect(url.searchParams.get('iss')).toBe(server.url);
  });
});

describe('response_type', () => {
  it('missing: redirects with invalid_request, the state and the issuer', async () => {
    const query = request({ response_type: undefined });
    expectErrorRedirect(await authorize(query), query, 'invalid_request');
  });

  it('token (implicit flow): redirects with unsupported_response_type', async () => {
    const query = request({ response_type: 'token' });
    expectErrorRedirect(await authorize(query), query, 'unsupported_response_type');
  });
});

describe('redirect_uri not registered: an error page, never a redirect', () => {
  it('an unknown URI', async () => {
    const reply = await authorize(request({ redirect_uri: 'https://attacker.example.test/callback' }));
    expectErrorPage(reply, 'redirect_uri not registered', 'invalid_request');
    expect(reply.body).not.toContain('attacker.example.test');
  });

  it('the registered URI with a trailing slash', async () => {
    expectErrorPage(
      await authorize(request({ redirect_uri: `${REDIRECT}/` })),
      'redirect_uri not registered',
      'invalid_request',
    );
  });

  it('the registered URI with a different query', async () => {
    expectErrorPage(
      await authorize(request({ redirect_uri: `${REDIRECT}?next=/admin` })),
      'redirect_uri not registered',
      'invalid_request',
    );
  });

  it('missing redirect_uri', async () => {
    const reply = await authorize(request({ redirect_uri: undefined }));
    expect(reply.status).toBe(400);
    expect(reply.location).toBeNull();
    expect(reply.body).toContain('invalid_request');
  });
});

describe('the client cannot be trusted: an error page, never a redirect', () => {
  it('unknown client_id', async () => {
    expectErrorPage(await authorize(request({}, 'tsc_doesnotexist')), 'Client not found', 'invalid_client');
  });

  it('missing client_id', async () => {
    expectErrorPage(await authorize(request({ client_id: undefined })), 'Client not found', 'invalid_client');
  });

  it('a disabled client', async () => {
    const disabled = await registerApp({ name: 'Soon disabled' });
    expect((await authorize(request({}, disabled.client_id))).status).toBe(302);
    const patched = await admin.patch(`/api/v1/oauth-clients/${disabled.id}`, { enabled: false });
    expect(patched.status).toBe(200);
    expectErrorPage(await authorize(request({}, disabled.client_id)), 'Client not found', 'invalid_client');
  });

  it('client_id given twice: the client is not identified', async () => {
    const query = request();
    query.append('client_id', app.client_id);
    const reply = await authorize(query);
    expect(reply.status).toBe(400);
    expect(reply.location).toBeNull();
    expect(reply.type).toMatch(/^text\/html/);
    expect(reply.body).not.toContain('code=');
  });

  it('redirect_uri given twice (once registered, once not)', async () => {
    const query = request();
    query.append('redirect_uri', 'https://attacker.example.test/callback');
    const reply = await authorize(query);
    expect(reply.status).toBe(400);
    expect(reply.location).toBeNull();
    expect(reply.body).toContain('invalid_request');
  });
});

describe('scope', () => {
  it('a scope the client may not ask for: invalid_scope, "Requested scope not allowed"', async () => {
    const query = request({ scope: 'openid organization' });
    expectErrorRedirect(await authorize(query), query, 'invalid_scope', 'Requested scope not allowed');
  });

  it('a misspelled scope: invalid_scope, "Requested scope not allowed"', async () => {
    const query = request({ scope: 'openid profil' });
    expectErrorRedirect(await authorize(query), query, 'invalid_scope', 'Requested scope not allowed');
  });

  it('missing scope: invalid_request', async () => {
    const query = request({ scope: undefined });
    expectErrorRedirect(await authorize(query), query, 'invalid_request');
  });
});

describe('prompt=none', () => {
  it('without a session: login_required, not the sign-in page', async () => {
    const query = request({ prompt: 'none' });
    expectErrorRedirect(await authorize(query, null), query, 'login_required');
  });

  it('with a session but consent not yet given: consent_required, not the consent page', async () => {
    const query = request({ prompt: 'none' }, consentApp.client_id);
    expectErrorRedirect(await authorize(query), query, 'consent_required');
  });

  it('without prompt=none the same requests go to the sign-in and consent pages (control)', async () => {
    const login = await authorize(request(), null);
    expect(login.status).toBe(302);
    expect(login.location).toMatch(/^\/login\?/);
    const consent = await authorize(request({}, consentApp.client_id));
    expect(consent.status).toBe(302);
    expect(consent.location).toMatch(/^\/consent\?/);
  });
});

describe('malformed OpenID Connect requests', () => {
  it('openid scope without nonce: a code all the same (nonce is optional in the code flow, OIDC Core 3.1.2.1)', async () => {
    const query = request({ nonce: undefined });
    const reply = await authorize(query);
    expect(reply.status, reply.body).toBe(302);
    const url = new URL(reply.location!);
    expect(url.searchParams.get('error')).toBeNull();
    expect(url.searchParams.get('code')).toBeTruthy();
  });

  it('a nonce longer than 512 characters: invalid_request', async () => {
    const query = request({ nonce: 'n'.repeat(513) });
    expectErrorRedirect(await authorize(query), query, 'invalid_request', 'nonce is too long');
  });

  it('a parameter given twice (two scope parameters): invalid_request', async () => {
    const query = request({ scope: 'openid' });
    query.append('scope', 'profile');
    expectErrorRedirect(await authorize(query), query, 'invalid_request');
  });
});

describe("the client's organization", () => {
  it('a user who is not a member: invalid_client, "Client not found"', async () => {
    const query = request();
    expectErrorRedirect(await authorize(query, outsider.token), query, 'invalid_client', 'Client not found');
  });
});

describe('PKCE parameters', () => {
  it('a code_challenge that is too short: invalid_request', async () => {
    const query = request({ code_challenge: 'abc123', code_challenge_method: 'S256' });
    expectErrorRedirect(await authorize(query), query, 'invalid_request');
  });

  it('code_challenge_method=S512: invalid_request', async () => {
    const query = request({ code_challenge: 'a'.repeat(43), code_challenge_method: 'S512' });
    expectErrorRedirect(await authorize(query), query, 'invalid_request');
  });

  it('a valid S256 challenge is accepted (control)', async () => {
    const query = request({
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    const reply = await authorize(query);
    expect(reply.status).toBe(302);
    expect(new URL(reply.location!).searchParams.get('code')).toBeTruthy();
  });
});
