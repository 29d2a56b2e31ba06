// Issue 6 D3 (the token side) and D12: a refresh re-checks that the user is still a member of the grant's
// organization, and userinfo serves only tokens granted openid (OIDC Core 5.3.3; RFC 6750 3.1 for the answer).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import type { Client } from '../helpers/http.ts';
import { addPerson, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { signIn } from '../helpers/http.ts';
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
let admin: Client;
let tenant: Tenant;
let app: RegisteredClient;

beforeAll(async () => {
  ({ server, admin, tenant } = await startWithSignedInMember());
  app = await registerClient(admin, {
    name: 'Membership',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email', 'profile'],
    consent_required: false,
    organization_id: tenant.id,
  });
});
afterAll(() => server?.stop());

/** A new member of the tenant, signed in, with tokens from a code exchange for `scope`. */
async function memberWithTokens(scope = 'openid email') {
  const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'leaver');
  const session = (await signIn(server.url, person.email, PASSWORD)).login.token;
  const code = codeFrom(
    await authorize(server.url, session, {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope,
      state: 's',
    }),
  );
  const tokens = await exchangeCode(server.url, app, code, REDIRECT);
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return { person, tokens: tokens.body as { access_token: string; refresh_token: string } };
}

const refresh = (token: string) =>
  tokenRequest(server.url, {
    grant_type: 'refresh_token',
    refresh_token: token,
    client_id: app.client_id,
    client_secret: app.client_secret,
  });
const userinfo = (accessToken: string) =>
  fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
const grantOf = async (refreshToken: string) => {
  const { createHash } = await import('node:crypto');
  const row = await server.base.db.refreshToken.findUnique({
    where: { tokenHash: createHash('sha256').update(refreshToken).digest('hex') },
    include: { grant: true },
  });
  return row!.grant;
};

describe('a refresh after the user left the organization', () => {
  it('removed over the interface: invalid_grant, and the access token stops working', async () => {
    const { person, tokens } = await memberWithTokens();
    const fresh = await refresh(tokens.refresh_token);
    expect(fresh.status).toBe(200);
    const removed = await tenant.owner.api.delete(`/v1/organizations/${tenant.id}/members/${person.id}`);
    expect(removed.status).toBe(204);

    const reply = await refresh(fresh.body.refresh_token);
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe('invalid_grant');
    expect((await userinfo(fresh.body.access_token)).status).toBe(401);
  });

  it('a membership that ended without its grants being revoked: the refresh checks it, refuses and ends the grant', async () => {
    const { person, tokens } = await memberWithTokens();
    // Only the membership row goes: what the token endpoint must notice on its own.
    await server.base.db.membership.delete({
      where: { userId_organizationId: { userId: person.id, organizationId: tenant.id } },
    });

    const reply = await refresh(tokens.refresh_token);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({
      error: 'invalid_grant',
      error_description: 'The user is no longer a member of the organization',
    });
    expect((await grantOf(tokens.refresh_token)).revokedAt).not.toBeNull();
    expect((await userinfo(tokens.access_token)).status).toBe(401);
  });
});

describe('userinfo', () => {
  it('refuses a token without openid: 403 insufficient_scope with the RFC 6750 challenge', async () => {
    const { tokens } = await memberWithTokens('email profile');
    const reply = await userinfo(tokens.access_token);
    expect(reply.status).toBe(403);
    expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer error="insufficient_scope"/);
    expect(reply.headers.get('www-authenticate')).toContain('scope="openid"');
    expect((await reply.json()).error).toBe('insufficient_scope');
  });

  it('serves the same user once openid is granted (control)', async () => {
    const { person, tokens } = await memberWithTokens('openid email');
    const reply = await userinfo(tokens.access_token);
    expect(reply.status).toBe(200);
    expect(await reply.json()).toMatchObject({ sub: person.id, email: person.email });
  });
});
