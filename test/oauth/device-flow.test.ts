// The device authorization grant (RFC 8628, docs/architecture.md#apps-without-secrets), driven with openid-client's
// device-flow functions as a public client: the codes, every polling answer (authorization_pending, slow_down,
// access_denied, expired_token, invalid_grant after the tokens), an approval through the /device page's GraphQL
// operations, 20 polls at once giving one set of tokens, single-use and throttled user codes.
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type Client } from '../helpers/http.ts';
import { movableClock } from '../helpers/clock.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import { addPerson, createTenant } from '../helpers/fixtures.ts';
import {
  registerClient,
  sessionOf,
  startWithSignedInMember,
  tokenRequest,
  type SignedInMember,
} from '../helpers/oauth.ts';

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const clock = movableClock();

let setup: SignedInMember;
let device: { id: string; client_id: string };
let rp: oidc.Configuration;
/** The signed-in member's GraphQL client (their browser session). */
let member: Client;

beforeAll(async () => {
  setup = await startWithSignedInMember({ clock });
  device = await registerClient(setup.tenant.admin.api, {
    name: 'Notes for the TV',
    description: 'The living-room app',
    token_endpoint_auth_method: 'none',
    redirect_uris: [],
    grant_types: [DEVICE_GRANT, 'refresh_token'],
    allowed_scopes: ['openid', 'email', 'offline_access'],
  });
  rp = await oidc.discovery(new URL(setup.server.url), device.client_id, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
  });
  member = client(setup.server.url, { token: setup.session });
});
afterAll(() => setup?.server.stop());

const start = () => oidc.initiateDeviceAuthorization(rp, { scope: 'openid email offline_access' });

const poll = (deviceCode: string) =>
  tokenRequest(setup.server.url, { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: device.client_id });

async function lookUp(as: Client, userCode: string) {
  return as.post('/graphql', {
    query: `query($c: String!) { deviceRequest(userCode: $c) { userCode clientName clientDescription organizationName scopes { name description } } }`,
    variables: { c: userCode },
  });
}

async function decide(as: Client, userCode: string, approve: boolean) {
  const reply = await as.post('/graphql', {
    query: `mutation($c: String!, $a: Boolean!) { decideDeviceRequest(userCode: $c, approve: $a) {
      __typename ... on DeviceDecision { approved } ... on UserError { code message } } }`,
    variables: { c: userCode, a: approve },
  });
  return reply.body.data?.decideDeviceRequest ?? reply.body.errors?.[0];
}

describe('the device authorization endpoint', () => {
  it('answers the codes, the verification URIs, 600 s and an interval of 5 s; discovery names it', async () => {
    const res = await fetch(`${setup.server.url}/oauth/device_authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: device.client_id, scope: 'openid' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, unknown>;
    expectMatchesOpenApi('POST', '/oauth/device_authorization', { status: 200, headers: res.headers, body });
    expect(body).toMatchObject({
      device_code: expect.stringMatching(/^tsdg_/),
      user_code: expect.stringMatching(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/),
      verification_uri: `${setup.server.url}/device`,
      expires_in: 600,
      interval: 5,
    });
    expect(body.verification_uri_complete).toBe(
      `${setup.server.url}/device?user_code=${encodeURIComponent(body.user_code as string)}`,
    );
    const metadata = rp.serverMetadata();
    expect(metadata.device_authorization_endpoint).toBe(`${setup.server.url}/oauth/device_authorization`);
    expect(metadata.grant_types_supported).toContain(DEVICE_GRANT);
    // Stored hashed: neither code is in the row.
    const row = await setup.server.base.db.deviceAuthorization.findFirstOrThrow({ orderBy: { createdAt: 'desc' } });
    expect(JSON.stringify(row)).not.toContain(body.device_code);
    expect(JSON.stringify(row)).not.toContain((body.user_code as string).replace('-', ''));
  });

  it('refuses a client without the grant, a scope it may not have, a missing scope and a foreign secret', async () => {
    const web = await registerClient(setup.tenant.admin.api, {
      name: 'Web only',
      token_endpoint_auth_method: 'none',
      redirect_uris: ['https://web.example.test/cb'],
      allowed_scopes: ['openid'],
    });
    const ask = (body: Record<string, string>) =>
      fetch(`${setup.server.url}/oauth/device_authorization`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error: string } }));
    expect(await ask({ client_id: web.client_id, scope: 'openid' })).toMatchObject({
      status: 400,
      body: { error: 'unauthorized_client' },
    });
    expect((await ask({ client_id: device.client_id, scope: 'openid api' })).body.error).toBe('invalid_scope');
    expect((await ask({ client_id: device.client_id })).body.error).toBe('invalid_request');
    expect(await ask({ client_id: device.client_id, scope: 'openid', client_secret: 'x' })).toMatchObject({
      status: 401,
      body: { error: 'invalid_client' },
    });
    expect((await ask({ client_id: 'tsc_nobody', scope: 'openid' })).status).toBe(401);
    const get = await fetch(`${setup.server.url}/oauth/device_authorization`);
    expect(get.status).toBe(405);
  });
});

describe('polling', () => {
  it('answers authorization_pending, then slow_down to a poll sooner than the interval, adding 5 s each time', async () => {
    const started = await start();
    const first = await poll(started.device_code);
    expect(first.status).toBe(400);
    expect(first.body.error).toBe('authorization_pending');
    expectMatchesOpenApi('POST', '/oauth/token', first);
    const second = await poll(started.device_code);
    expect(second.body.error).toBe('slow_down');
    clock.advance(6);
    // 6 s after the last poll, but the interval is 10 s now.
    expect((await poll(started.device_code)).body.error).toBe('slow_down');
    clock.advance(16);
    expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
    const row = await setup.server.base.db.deviceAuthorization.findFirstOrThrow({
      where: { status: 'pending', intervalSeconds: 15 },
    });
    expect(row.clientId).toBe(device.id);
  });

  it('gives the tokens to openid-client once the person approves, then invalid_grant', async () => {
    const started = await start();
    // given the person reading the request on /device
    const shown = await lookUp(member, started.user_code.toLowerCase().replace('-', ' '));
    expect(shown.body.data.deviceRequest).toEqual({
      userCode: started.user_code,
      clientName: 'Notes for the TV',
      clientDescription: 'The living-room app',
      organizationName: setup.tenant.name,
      scopes: [
        { name: 'openid', description: 'Sign you in with your Tessera account' },
        { name: 'email', description: 'See your e-mail address' },
        { name: 'offline_access', description: 'Stay connected when you are not using it' },
      ],
    });
    // when they approve while openid-client waits its interval
    const polling = oidc.pollDeviceAuthorizationGrant(rp, started);
    expect(await decide(member, started.user_code, true)).toEqual({ __typename: 'DeviceDecision', approved: true });
    const tokens = await polling;
    // then it gets an ID token it validated, and a refresh token that works
    expect(tokens.claims()).toMatchObject({ aud: device.client_id, email: setup.tenant.member.email });
    expect(tokens.refresh_token).toMatch(/^tsr_/);
    const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
    expect(refreshed.access_token).toBeTruthy();
    // and the device code is spent, and so is the user code
    const again = await poll(started.device_code);
    expect(again.body).toEqual({
      error: 'invalid_grant',
      error_description: 'The tokens of this device code were issued already',
    });
    expect((await lookUp(member, started.user_code)).body.errors[0].extensions.code).toBe('invalid_request');
  }, 30_000);

  it('gives one set of tokens to 20 polls at once', async () => {
    const started = await start();
    await decide(member, started.user_code, true);
    const replies = await Promise.all(Array.from({ length: 20 }, () => poll(started.device_code)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.body.error === 'invalid_grant')).toHaveLength(19);
    // One grant, with one refresh token: the losers wrote nothing.
    const issued = await setup.server.base.db.deviceAuthorization.findFirstOrThrow({
      where: { clientId: device.id, status: 'issued' },
      orderBy: { createdAt: 'desc' },
    });
    expect(await setup.server.base.db.refreshToken.count({ where: { grantId: issued.grantId! } })).toBe(1);
  });

  it('answers access_denied to a denied code', async () => {
    const started = await start();
    expect(await decide(member, started.user_code, false)).toEqual({ __typename: 'DeviceDecision', approved: false });
    const reply = await poll(started.device_code);
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe('access_denied');
    const failure = await oidc.pollDeviceAuthorizationGrant(rp, { ...started, interval: 0 }).catch((e: unknown) => e);
    expect((failure as oidc.ResponseBodyError).error).toBe('access_denied');
  });

  it("answers invalid_grant to another client's device code", async () => {
    const started = await start();
    const other = await registerClient(setup.tenant.admin.api, {
      name: 'Another device',
      token_endpoint_auth_method: 'none',
      redirect_uris: [],
      grant_types: [DEVICE_GRANT],
      allowed_scopes: ['openid'],
    });
    const reply = await tokenRequest(setup.server.url, {
      grant_type: DEVICE_GRANT,
      device_code: started.device_code,
      client_id: other.client_id,
    });
    expect(reply.body.error).toBe('invalid_grant');
    expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
  });
});

describe('the user code', () => {
  it('is answered once when two approvals race', async () => {
    const started = await start();
    const answers = await Promise.all([
      decide(member, started.user_code, true),
      decide(member, started.user_code, true),
      decide(member, started.user_code, false),
    ]);
    expect(answers.filter((a) => a.__typename === 'DeviceDecision')).toHaveLength(1);
    const grants = await setup.server.base.db.oAuthGrant.count({
      where: { clientId: device.id, deviceAuthorization: null },
    });
    expect(grants).toBe(0);
  });

  it('is refused to a person outside the organization, and approved by no token but a browser session', async () => {
    const started = await start();
    const outsider = (await createTenant(setup.server.url, setup.admin)).member;
    const foreign = client(setup.server.url, { token: await sessionOf(setup.server.url, outsider) });
    const refused = await decide(foreign, started.user_code, true);
    expect(refused.extensions.code).toBe('forbidden');
    expect(refused.message).toBe('Your account is not a member of the organization this application belongs to');
    const apiKey = await setup.tenant.owner.api.post('/api/v1/api-keys', { name: 'k' });
    const keyed = client(setup.server.url, { apiKey: { key: apiKey.body.key, secret: apiKey.body.secret } });
    const byKey = await decide(keyed, started.user_code, true);
    // The operation is a signed-in person's (authScopes session): an API key holds no role for it.
    expect(byKey).toMatchObject({ extensions: { code: 'forbidden' }, message: 'Your role does not allow this' });
    expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
  });

  it('counts wrong codes against the sign-in throttle: the sixth is refused with 429', async () => {
    const person = await addPerson(setup.server.url, setup.tenant.owner.api, setup.tenant.id, 'member', 'guesser');
    const guesser = client(setup.server.url, { token: await sessionOf(setup.server.url, person) });
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) codes.push((await lookUp(guesser, 'BCDF-GHJK')).body.errors[0].extensions.code);
    expect(codes.slice(0, 5)).toEqual(Array(5).fill('invalid_request'));
    expect(codes[5]).toBe('rate_limited');
    // Malformed codes, NUL bytes and invalid UTF-8 are wrong codes too, never a 500.
    const nul = await lookUp(member, 'BCDF\u0000GHJK');
    expect(nul.status).toBe(200);
    expect(nul.body.errors[0].extensions.code).toBe('invalid_request');
  });

  it('expires with its device code: expired_token', async () => {
    const started = await start();
    clock.advance(601);
    expect((await poll(started.device_code)).body.error).toBe('expired_token');
    expect((await lookUp(member, started.user_code)).body.errors[0].extensions.code).toBe('invalid_request');
  });
});

describe('hostile input', () => {
  it('answers NUL bytes, invalid UTF-8, repeated and oversized parameters with 400, never a 500', async () => {
    const post = (path: string, body: string) =>
      fetch(`${setup.server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error: string } }));
    const id = encodeURIComponent(device.client_id);
    for (const body of [
      `client_id=${id}&scope=openid%00email`,
      `client_id=${id}&scope=%FF%FE`,
      `client_id=${id}&scope=openid&scope=email`,
      `client_id=${id}&scope=${'a'.repeat(5000)}`,
    ]) {
      const reply = await post('/oauth/device_authorization', body);
      expect(reply.status, body.slice(0, 60)).toBe(400);
      expect(reply.body.error).toMatch(/^invalid_(request|scope)$/);
    }
    for (const code of ['tsdg_%00', '%FF%FE', 'x'.repeat(5000)]) {
      const reply = await post(
        '/oauth/token',
        `grant_type=${encodeURIComponent(DEVICE_GRANT)}&client_id=${id}&device_code=${code}`,
      );
      expect(reply.status, code.slice(0, 20)).toBe(400);
      expect(reply.body.error).toMatch(/^invalid_(request|grant)$/);
    }
  });

  it('lets no foreign origin read the device endpoint from a browser', async () => {
    const res = await fetch(`${setup.server.url}/oauth/device_authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example.test' },
      body: new URLSearchParams({ client_id: device.client_id, scope: 'openid' }),
    });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});
