// A code exchange or refresh for a client the process has already authenticated is one statement: the remembered
// client row is a guess that the redeeming statement confirms against the row's version (remembered-clients.ts).
// Whatever changes the row (a rotated secret, disabling, a write by another process) is seen by the next request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onStatement } from '../../schema/db.ts';
import type { TestServer } from '../helpers/server.ts';
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

const REDIRECT = 'https://rp.example.test/cb';
let server: TestServer;
let tenant: Tenant;
let session: string;

beforeAll(async () => {
  ({ server, tenant, session } = await startWithSignedInMember());
});
afterAll(() => server?.stop());

const register = () =>
  registerClient(tenant.admin.api, {
    name: 'Remembered',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'offline_access'],
    consent_required: false,
  });
const newCode = async (c: RegisteredClient) =>
  codeFrom(
    await authorize(server.url, session, {
      client_id: c.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid offline_access',
      state: 's',
    }),
  );

async function counting<T>(fn: () => Promise<T>): Promise<{ result: T; statements: number }> {
  let statements = 0;
  const stop = onStatement(server.base.db, () => statements++);
  try {
    return { result: await fn(), statements };
  } finally {
    stop();
  }
}

describe('token requests of a remembered client', () => {
  it('exchange a code and refresh in one statement each once the client has been authenticated', async () => {
    const c = await register();
    const first = await counting(async () => exchangeCode(server.url, c, await newCode(c), REDIRECT));
    expect(first.result.status, JSON.stringify(first.result.body)).toBe(200);
    const code = await newCode(c);
    const second = await counting(() => exchangeCode(server.url, c, code, REDIRECT));
    expect(second.result.status, JSON.stringify(second.result.body)).toBe(200);
    expect(second.statements).toBe(1);
    const refreshed = await counting(() =>
      tokenRequest(server.url, {
        grant_type: 'refresh_token',
        refresh_token: second.result.body.refresh_token,
        client_id: c.client_id,
        client_secret: c.client_secret,
      }),
    );
    expect(refreshed.result.status, JSON.stringify(refreshed.result.body)).toBe(200);
    expect(refreshed.statements).toBe(1);
  });

  it('refuse the old secret at once after a rotation, without spending the code', async () => {
    const c = await register();
    expect((await exchangeCode(server.url, c, await newCode(c), REDIRECT)).status).toBe(200);
    const rotated = await tenant.admin.api.post(`/api/v1/oauth-clients/${c.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const code = await newCode(c);
    const refused = await exchangeCode(server.url, c, code, REDIRECT);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_client');
    // The code is still good for the client's rightful holder of the new secret.
    const accepted = await exchangeCode(
      server.url,
      { client_id: c.client_id, client_secret: rotated.body.client_secret },
      code,
      REDIRECT,
    );
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  });

  it('refuse a client disabled since it was remembered', async () => {
    const c = await register();
    const tokens = await exchangeCode(server.url, c, await newCode(c), REDIRECT);
    expect(tokens.status).toBe(200);
    expect((await tenant.admin.api.patch(`/api/v1/oauth-clients/${c.id}`, { enabled: false })).status).toBe(200);
    const refused = await tokenRequest(server.url, {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token,
      client_id: c.client_id,
      client_secret: c.client_secret,
    });
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: 'invalid_client', error_description: 'Client not found' });
  });

  it('answer from a fresh read when another process changed the row, and remember the new version', async () => {
    const c = await register();
    expect((await exchangeCode(server.url, c, await newCode(c), REDIRECT)).status).toBe(200);
    // As another process would: a write this process never saw, leaving the secret as it was.
    await server.base.db.$executeRaw`update oauth_clients set description = 'changed elsewhere' where id = ${c.id}`;
    const code = await newCode(c);
    const changed = await counting(() => exchangeCode(server.url, c, code, REDIRECT));
    expect(changed.result.status, JSON.stringify(changed.result.body)).toBe(200);
    expect(changed.statements).toBe(3); // the guess that redeemed nothing, the fresh read, the redemption
    const code2 = await newCode(c);
    expect((await counting(() => exchangeCode(server.url, c, code2, REDIRECT))).statements).toBe(1);
  });

  it('answer a malformed request from a client disabled elsewhere with invalid_client, as a fresh read would', async () => {
    const c = await register();
    const tokens = await exchangeCode(server.url, c, await newCode(c), REDIRECT);
    expect(tokens.status).toBe(200);
    await server.base.db.$executeRaw`update oauth_clients set enabled = false where id = ${c.id}`;
    const noCode = await tokenRequest(server.url, {
      grant_type: 'authorization_code',
      redirect_uri: REDIRECT,
      client_id: c.client_id,
      client_secret: c.client_secret,
    });
    expect(noCode.status).toBe(401);
    expect(noCode.body.error).toBe('invalid_client');
    const noRefreshToken = await tokenRequest(server.url, {
      grant_type: 'refresh_token',
      client_id: c.client_id,
      client_secret: c.client_secret,
    });
    expect(noRefreshToken.status).toBe(401);
    expect(noRefreshToken.body.error).toBe('invalid_client');
  });

  it('still answer a malformed request from an unchanged remembered client with its own error', async () => {
    const c = await register();
    expect((await exchangeCode(server.url, c, await newCode(c), REDIRECT)).status).toBe(200);
    const noCode = await tokenRequest(server.url, {
      grant_type: 'authorization_code',
      redirect_uri: REDIRECT,
      client_id: c.client_id,
      client_secret: c.client_secret,
    });
    expect(noCode.status).toBe(400);
    expect(noCode.body).toEqual({ error: 'invalid_request', error_description: 'code is required' });
  });

  it('still end the grant when a remembered client replays a code', async () => {
    const c = await register();
    expect((await exchangeCode(server.url, c, await newCode(c), REDIRECT)).status).toBe(200);
    const code = await newCode(c);
    const tokens = await exchangeCode(server.url, c, code, REDIRECT);
    expect(tokens.status).toBe(200);
    const replay = await exchangeCode(server.url, c, code, REDIRECT);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    const refresh = await tokenRequest(server.url, {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token,
      client_id: c.client_id,
      client_secret: c.client_secret,
    });
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
  });
});
