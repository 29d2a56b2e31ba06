// The refresh_token grant per RFC 6749 section 6: a refused refresh spends nothing (the client's retry with the same
// token is not a replay), a narrower scope narrows only what this response issues (the access token and ID token),
// and the new refresh token keeps the scope of the one presented. A replay of a spent token still ends the grant
// (OAuth 2.0 Security BCP 4.14).
import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import type { Client } from '../helpers/http.ts';
import {
  authorize,
  codeFrom,
  exchangeCode,
  registerClient,
  startWithSignedInMember,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://app.example.test/cb';
const SCOPE = 'openid email profile offline_access';

let server: TestServer;
let session: string;
let app: RegisteredClient;
let other: RegisteredClient;

beforeAll(async () => {
  let admin: Client;
  let tenant;
  ({ server, admin, tenant, session } = await startWithSignedInMember());
  const body = {
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email', 'profile', 'offline_access', 'api'],
    consent_required: false,
    organization_id: tenant.id,
  };
  app = await registerClient(admin, { ...body, name: 'Refreshing app' });
  other = await registerClient(admin, { ...body, name: 'Another app' });
});
afterAll(() => server?.stop());

interface Tokens {
  access_token: string;
  refresh_token: string;
  id_token?: string;
  scope: string;
}

async function tokens(scope = SCOPE): Promise<Tokens> {
  const back = await authorize(server.url, session, {
    client_id: app.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope,
    nonce: 'n',
    state: 's',
  });
  const reply = await exchangeCode(server.url, app, codeFrom(back), REDIRECT);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

const refresh = (
  refreshToken: string,
  extra: Record<string, string> = {},
  c: Pick<RegisteredClient, 'client_id' | 'client_secret'> = app,
) =>
  tokenRequest(server.url, {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: c.client_id,
    client_secret: c.client_secret,
    ...extra,
  });

const userinfo = (accessToken: string) =>
  fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });

const storedScope = async (refreshToken: string) =>
  (
    await server.base.db.refreshToken.findUniqueOrThrow({
      where: { tokenHash: createHash('sha256').update(refreshToken).digest('hex') },
    })
  ).scope;

describe('a refused refresh spends nothing', () => {
  it('a scope beyond the grant: invalid_scope, and the same refresh token works afterwards, the grant unharmed', async () => {
    const first = await tokens();
    for (const scope of ['openid api', 'openid email profile offline_access api', 'openid nonsense']) {
      const refused = await refresh(first.refresh_token, { scope });
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(refused.body.error, scope).toBe('invalid_scope');
    }
    // Hostile scopes are refused as scopes (or requests), never a 500, and spend nothing either.
    for (const scope of ['openid\u0000', 'openid\tapi', '\ud800', 'x'.repeat(5000)]) {
      const refused = await refresh(first.refresh_token, { scope });
      expect(refused.status, `${JSON.stringify(scope)} ${JSON.stringify(refused.body)}`).toBe(400);
      expect(['invalid_scope', 'invalid_request']).toContain(refused.body.error);
    }
    // Nothing was spent: the retry is no replay, and the grant's earlier access token still stands.
    const retried = await refresh(first.refresh_token);
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.scope).toBe(SCOPE);
    expect((await userinfo(first.access_token)).status).toBe(200);
    expect((await userinfo(retried.body.access_token)).status).toBe(200);
  });

  it('another client, or a wrong client secret: refused, and the same refresh token works afterwards for its own client', async () => {
    const first = await tokens();
    const stolen = await refresh(first.refresh_token, {}, other);
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe('invalid_grant');
    const wrongSecret = await refresh(
      first.refresh_token,
      {},
      { client_id: app.client_id, client_secret: `${app.client_secret}x` },
    );
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body.error).toBe('invalid_client');
    const own = await refresh(first.refresh_token);
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect((await userinfo(first.access_token)).status).toBe(200);
  });

  it('a replay after the refused request still ends the grant', async () => {
    const first = await tokens();
    expect((await refresh(first.refresh_token, { scope: 'openid api' })).body.error).toBe('invalid_scope');
    const used = await refresh(first.refresh_token);
    expect(used.status, JSON.stringify(used.body)).toBe(200);

    const replayed = await refresh(first.refresh_token);
    expect(replayed.status).toBe(400);
    expect(replayed.body.error).toBe('invalid_grant');
    // Everything issued from the grant ends: the rotated refresh token and the access tokens.
    expect((await refresh(used.body.refresh_token)).body.error).toBe('invalid_grant');
    expect((await userinfo(used.body.access_token)).status).toBe(401);
    expect((await userinfo(first.access_token)).status).toBe(401);
  });
});

describe('a narrower refresh', () => {
  it('narrows the access token and the ID token only: the new refresh token keeps the scope of the one presented', async () => {
    const first = await tokens();
    const narrow = await refresh(first.refresh_token, { scope: 'openid' });
    expect(narrow.status, JSON.stringify(narrow.body)).toBe(200);
    expect(narrow.body.scope).toBe('openid');
    expect(decodeJwt(narrow.body.access_token).scope).toBe('openid');
    expect(decodeJwt(narrow.body.id_token)).not.toHaveProperty('email');
    const info = await (await userinfo(narrow.body.access_token)).json();
    expect(info).not.toHaveProperty('email');

    expect(await storedScope(narrow.body.refresh_token)).toBe(SCOPE);
    // The next refresh, asking nothing, gets the whole grant back; asking for email is within it.
    const whole = await refresh(narrow.body.refresh_token);
    expect(whole.status, JSON.stringify(whole.body)).toBe(200);
    expect(whole.body.scope).toBe(SCOPE);
    expect(decodeJwt(whole.body.id_token).email).toBeTruthy();
    const email = await refresh(whole.body.refresh_token, { scope: 'email openid' });
    expect(email.status, JSON.stringify(email.body)).toBe(200);
    expect(email.body.scope).toBe('email openid');
    expect(await storedScope(email.body.refresh_token)).toBe(SCOPE);
  });
});
