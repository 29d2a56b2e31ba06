// CORS on the endpoints a browser application calls directly: an Origin listed in an enabled client's
// allowed_origins is echoed in Access-Control-Allow-Origin, on the preflight and on the actual request; any other
// origin gets no CORS headers at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import type { Reply } from '../helpers/http.ts';
import type { Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  exchangeCode,
  registerClient,
  startWithSignedInMember,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const SPA_ORIGIN = 'https://spa.example.test';
const SPA_REDIRECT = `${SPA_ORIGIN}/callback`;
const DISABLED_ORIGIN = 'https://retired.example.test';
const UNLISTED = ['https://evil.example.test', 'http://spa.example.test', 'https://spa.example.test:8443', 'null'];

let server: TestServer;
let tenant: Tenant;
let spa: RegisteredClient;
let session: string;

beforeAll(async () => {
  ({ server, tenant, session } = await startWithSignedInMember());
  const register = (body: Record<string, unknown>) =>
    registerClient(tenant.admin.api, {
      redirect_uris: [SPA_REDIRECT],
      allowed_scopes: ['openid', 'email'],
      consent_required: false,
      ...body,
    });
  spa = await register({ name: 'Single-page app', allowed_origins: [SPA_ORIGIN] });
  const retired = await register({ name: 'Retired app', allowed_origins: [DISABLED_ORIGIN] });
  const disabled = await tenant.admin.api.patch(`/api/v1/oauth-clients/${retired.id}`, { enabled: false });
  expect(disabled.status).toBe(200);
});
afterAll(() => server?.stop());

/** Fresh tokens of the SPA client for tenant.member, exchanged from `origin`: the token endpoint's whole reply. */
async function spaTokens(origin = SPA_ORIGIN): Promise<Reply> {
  const location = await authorize(server.url, session, {
    client_id: spa.client_id,
    redirect_uri: SPA_REDIRECT,
    response_type: 'code',
    scope: 'openid email',
    state: 's',
    nonce: 'n',
  });
  return exchangeCode(server.url, spa, codeFrom(location), SPA_REDIRECT, { origin });
}

/** POST /oauth/revoke as the SPA client, from `origin`. */
const revoke = (token: string, origin: string) =>
  fetch(`${server.url}/oauth/revoke`, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, client_id: spa.client_id, client_secret: spa.client_secret }),
  });

const preflight = (path: string, origin: string, method: string) =>
  fetch(`${server.url}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization, content-type',
    },
  });

function expectAllowed(res: { headers: Headers }, origin: string) {
  expect(res.headers.get('access-control-allow-origin')).toBe(origin);
  expect(res.headers.get('vary') ?? '').toMatch(/origin/i);
  // Bearer tokens, never cookies: credentials are not allowed cross-origin.
  expect(res.headers.get('access-control-allow-credentials')).toBeNull();
}

function expectNoCors(res: { headers: Headers }) {
  expect(res.headers.get('access-control-allow-origin')).toBeNull();
  expect(res.headers.get('access-control-allow-methods')).toBeNull();
  expect(res.headers.get('access-control-allow-headers')).toBeNull();
  expect(res.headers.get('access-control-allow-credentials')).toBeNull();
}

const ENDPOINTS: [string, string][] = [
  ['/oauth/token', 'POST'],
  ['/oauth/userinfo', 'GET'],
  ['/oauth/revoke', 'POST'],
  ['/oauth/introspect', 'POST'],
  ['/.well-known/jwks.json', 'GET'],
  ['/.well-known/openid-configuration', 'GET'],
];

describe('preflight (OPTIONS)', () => {
  for (const [path, method] of ENDPOINTS) {
    it(`${path}: a listed origin may ${method} with Authorization and Content-Type`, async () => {
      const res = await preflight(path, SPA_ORIGIN, method);
      expect(res.status).toBeGreaterThanOrEqual(200);
      expect(res.status).toBeLessThan(300);
      expectAllowed(res, SPA_ORIGIN);
      expect(res.headers.get('access-control-allow-methods') ?? '').toContain(method);
      const headers = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase();
      expect(headers).toContain('authorization');
      expect(headers).toContain('content-type');
    });

    it(`${path}: unlisted origins and a disabled client's origin get no CORS headers`, async () => {
      for (const origin of [...UNLISTED, DISABLED_ORIGIN]) expectNoCors(await preflight(path, origin, method));
    });
  }
});

describe('actual requests', () => {
  it('POST /oauth/token from a listed origin carries Access-Control-Allow-Origin', async () => {
    const res = await spaTokens();
    expect(res.status).toBe(200);
    expectAllowed(res, SPA_ORIGIN);
    expect(res.body.access_token).toBeTruthy();
  });

  it('POST /oauth/token errors from a listed origin are readable too', async () => {
    const res = await tokenRequest(
      server.url,
      {
        grant_type: 'refresh_token',
        refresh_token: 'tsr_unknown',
        client_id: spa.client_id,
        client_secret: spa.client_secret,
      },
      { origin: SPA_ORIGIN },
    );
    expect(res.status).toBe(400);
    expectAllowed(res, SPA_ORIGIN);
  });

  it('GET /oauth/userinfo from a listed origin carries it, and exposes WWW-Authenticate on a 401', async () => {
    const { access_token } = (await spaTokens()).body as { access_token: string };
    const ok = await fetch(`${server.url}/oauth/userinfo`, {
      headers: { origin: SPA_ORIGIN, authorization: `Bearer ${access_token}` },
    });
    expect(ok.status).toBe(200);
    expectAllowed(ok, SPA_ORIGIN);

    const denied = await fetch(`${server.url}/oauth/userinfo`, {
      headers: { origin: SPA_ORIGIN, authorization: 'Bearer not-a-token' },
    });
    expect(denied.status).toBe(401);
    expectAllowed(denied, SPA_ORIGIN);
    expect((denied.headers.get('access-control-expose-headers') ?? '').toLowerCase()).toContain('www-authenticate');
  });

  it('POST /oauth/revoke from a listed origin carries it', async () => {
    const { refresh_token } = (await spaTokens()).body as { refresh_token: string };
    const res = await revoke(refresh_token, SPA_ORIGIN);
    expect(res.status).toBe(200);
    expectAllowed(res, SPA_ORIGIN);
  });

  it('GET /.well-known/jwks.json and the discovery document from a listed origin carry it', async () => {
    for (const path of ['/.well-known/jwks.json', '/.well-known/openid-configuration']) {
      const res = await fetch(`${server.url}${path}`, { headers: { origin: SPA_ORIGIN } });
      expect(res.status).toBe(200);
      expectAllowed(res, SPA_ORIGIN);
    }
  });

  it('unlisted origins get the same answers without any CORS header', async () => {
    for (const origin of UNLISTED) {
      const token = await spaTokens(origin);
      expect(token.status).toBe(200);
      expectNoCors(token);
      const { access_token, refresh_token } = token.body as { access_token: string; refresh_token: string };

      const info = await fetch(`${server.url}/oauth/userinfo`, {
        headers: { origin, authorization: `Bearer ${access_token}` },
      });
      expect(info.status).toBe(200);
      expectNoCors(info);

      const revoked = await revoke(refresh_token, origin);
      expect(revoked.status).toBe(200);
      expectNoCors(revoked);

      const jwks = await fetch(`${server.url}/.well-known/jwks.json`, { headers: { origin } });
      expect(jwks.status).toBe(200);
      expectNoCors(jwks);
    }
  });

  it('stops allowing an origin once the client no longer lists it', async () => {
    const shortLived = await registerClient(tenant.admin.api, {
      name: 'Short-lived SPA',
      redirect_uris: [SPA_REDIRECT],
      allowed_scopes: ['openid'],
      allowed_origins: ['https://short.example.test'],
    });
    expectAllowed(await preflight('/oauth/token', 'https://short.example.test', 'POST'), 'https://short.example.test');
    expect(
      (await tenant.admin.api.patch(`/api/v1/oauth-clients/${shortLived.id}`, { allowed_origins: [] })).status,
    ).toBe(200);
    expectNoCors(await preflight('/oauth/token', 'https://short.example.test', 'POST'));
  });
});
