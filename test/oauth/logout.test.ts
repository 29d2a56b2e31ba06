// /oauth/logout without a valid id_token_hint (any page can send a browser there): the user is asked first, on
// the portal's /logout page, whose form posts a sign-out request signed for this very session back to the
// endpoint (RP-Initiated Logout 1.0 section 2). Only then does the session end and the browser go back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { client as restClient, type Client } from '../helpers/http.ts';
import type { Tenant } from '../helpers/fixtures.ts';
import {
  browserGet,
  registerClient,
  sessionOf,
  startWithSignedInMember,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const POST_LOGOUT = 'https://rp.example.test/bye';
let server: TestServer;
let admin: Client;
let tenant: Tenant;
let app: RegisteredClient;

beforeAll(async () => {
  ({ server, admin, tenant } = await startWithSignedInMember());
  app = await registerClient(admin, {
    name: 'App',
    redirect_uris: ['https://rp.example.test/cb'],
    post_logout_redirect_uris: [POST_LOGOUT],
    allowed_scopes: ['openid'],
    organization_id: tenant.id,
  });
});
afterAll(() => server?.stop());

const alive = async (session: string) =>
  (await restClient(server.url, { token: session }).get('/api/v1/users/me')).status === 200;

/** GET /oauth/logout as the browser holding `session`: the confirmation page it is sent to, and its request. */
async function askToLogOut(session: string, params: Record<string, string> = {}) {
  const res = await browserGet(`${server.url}/oauth/logout?${new URLSearchParams(params)}`, session);
  expect(res.status).toBe(303);
  const location = new URL(res.headers.get('location')!, server.url);
  expect(location.origin).toBe(server.url);
  expect(location.pathname).toBe('/logout');
  expect(res.headers.get('set-cookie')).toBeNull();
  return location.searchParams.get('request')!;
}

/** The confirmation form's POST to /oauth/logout. */
function confirm(session: string | null, request: string, extra: Record<string, string> = {}) {
  return fetch(`${server.url}/oauth/logout`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: server.url,
      ...(session ? { cookie: `tessera_session=${session}` } : {}),
    },
    body: new URLSearchParams({ logout_request: request, ...extra }),
  });
}

describe('RP-initiated logout without id_token_hint', () => {
  it('GET with only the session cookie asks first and does not sign out; confirming signs out', async () => {
    const session = await sessionOf(server.url, tenant.member);
    const request = await askToLogOut(session);
    expect(request).toBeTruthy();
    expect(await alive(session)).toBe(true);

    const res = await confirm(session, request);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/login?signed_out=1');
    expect(res.headers.get('set-cookie') ?? '').toMatch(/tessera_session=;/);
    expect(await alive(session)).toBe(false);
  });

  it('POST without a hint or a confirmed request asks first too', async () => {
    const session = await sessionOf(server.url, tenant.member);
    const res = await fetch(`${server.url}/oauth/logout`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `tessera_session=${session}` },
      body: new URLSearchParams({ client_id: app.client_id }),
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toMatch(/^\/logout\?request=/);
    expect(await alive(session)).toBe(true);
  });

  it('with client_id and a registered post_logout_redirect_uri: after confirming, back there with the state', async () => {
    const session = await sessionOf(server.url, tenant.member);
    const request = await askToLogOut(session, {
      client_id: app.client_id,
      post_logout_redirect_uri: POST_LOGOUT,
      state: 'st',
    });
    expect(await alive(session)).toBe(true);
    const res = await confirm(session, request);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${POST_LOGOUT}?state=st`);
    expect(await alive(session)).toBe(false);
  });

  it('an unregistered post_logout_redirect_uri is an error page before anything is asked', async () => {
    const session = await sessionOf(server.url, tenant.member);
    const query = new URLSearchParams({
      client_id: app.client_id,
      post_logout_redirect_uri: 'https://evil.example.test/',
    });
    const res = await browserGet(`${server.url}/oauth/logout?${query}`, session);
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('post_logout_redirect_uri not registered');
  });

  it('a request signed for another session, or a forged one, signs no one out', async () => {
    const mine = await sessionOf(server.url, tenant.member);
    const attackers = await sessionOf(server.url, tenant.admin);
    const request = await askToLogOut(attackers);

    const stolen = await confirm(mine, request);
    expect(stolen.status).toBe(400);
    expect(await stolen.text()).toContain('This sign-out request belongs to another sign-in');
    const forged = await confirm(mine, `${request.slice(0, -4)}AAAA`);
    expect(forged.status).toBe(400);
    expect(await forged.text()).toContain('The sign-out request is invalid or has expired');
    expect(await alive(mine)).toBe(true);
    expect(await alive(attackers)).toBe(true);
  });

  it('the confirmed request decides the redirect: parameters added to the POST are ignored', async () => {
    const session = await sessionOf(server.url, tenant.member);
    const request = await askToLogOut(session);
    const res = await confirm(session, request, { client_id: app.client_id, post_logout_redirect_uri: POST_LOGOUT });
    expect(res.headers.get('location')).toBe('/login?signed_out=1');
    expect(await alive(session)).toBe(false);
  });

  it('a signed-out browser is simply sent on', async () => {
    const res = await browserGet(
      `${server.url}/oauth/logout?${new URLSearchParams({ client_id: app.client_id, post_logout_redirect_uri: POST_LOGOUT })}`,
      null,
    );
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(POST_LOGOUT);
  });
});
