// The audit trail of the OAuth flow: authorizations, consents, replays, failed client authentication and revocations
// always; each token issued only when the operator turns AUDIT_TOKEN_ISSUANCE on (refreshes alone would write one per
// user per hour).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  decideConsent,
  registerClient,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/cb';
let server: TestServer;
let tenant: Tenant;
let app: RegisteredClient;

beforeAll(async () => {
  server = await startTestServer();
  const admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, admin);
  app = await registerClient(tenant.admin.api, {
    name: 'Audited',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email'],
  });
});
afterAll(() => server?.stop());

const audit = (action: string) =>
  server.base.db.auditLog.findMany({ where: { action, targetId: app.id }, orderBy: { createdAt: 'asc' } });

const token = (params: Record<string, string>) => tokenRequest(server.url, params);

describe('audit of the OAuth flow', () => {
  it('records consent given, the authorization, a replayed code, failed client authentication and consent revoked, and no token issued', async () => {
    const member = tenant.member;
    const consentPage = await authorize(server.url, member.token, {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid email',
      nonce: 'n',
      state: 's',
    });
    const code = codeFrom(await decideConsent(server.url, member.token, consentPage));
    const exchange = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: app.client_id,
      client_secret: app.client_secret,
    };
    expect((await token(exchange)).status).toBe(200);
    expect((await token(exchange)).status).toBe(400);
    expect((await token({ ...exchange, client_secret: 'wrong' })).status).toBe(401);
    expect(
      (
        await member.api.post('/graphql', {
          query: 'mutation($c: String!) { revokeConnectedApp(clientId: $c) { __typename } }',
          variables: { c: app.client_id },
        })
      ).status,
    ).toBe(200);

    const consent = await audit('oauth.consent.grant');
    expect(consent).toEqual([
      expect.objectContaining({ actorId: member.id, organizationId: tenant.id, outcome: 'success' }),
    ]);
    expect(consent[0]!.details).toMatchObject({ scope: 'openid email' });
    expect(await audit('oauth.authorize')).toEqual([
      expect.objectContaining({ actorId: member.id, organizationId: tenant.id }),
    ]);
    expect(await audit('oauth.token.issue')).toEqual([]);
    expect(await audit('oauth.code.replay')).toEqual([
      expect.objectContaining({ outcome: 'failure', organizationId: tenant.id }),
    ]);
    const failed = await audit('oauth.client_auth');
    expect(failed).toEqual([expect.objectContaining({ outcome: 'failure', organizationId: tenant.id })]);
    expect(failed[0]!.details).toMatchObject({ reason: 'bad_secret' });
    expect(await audit('oauth.consent.revoke')).toHaveLength(1);
    // Every entry says where it came from.
    const all = await server.base.db.auditLog.findMany({ where: { targetId: app.id } });
    expect(all.every((row) => row.ip !== null)).toBe(true);
  });
});

describe('with AUDIT_TOKEN_ISSUANCE', () => {
  it("records every token issued: a code exchanged, a refresh, a machine client's", async () => {
    const audited = await startTestServer({ env: { AUDIT_TOKEN_ISSUANCE: 'true' } });
    try {
      const admin = (await signIn(audited.url, ADMIN.email, ADMIN.password)).api;
      const org = await createTenant(audited.url, admin);
      const rp = await registerClient(org.admin.api, {
        name: 'Audited',
        redirect_uris: [REDIRECT],
        allowed_scopes: ['openid', 'offline_access', 'reports'],
        consent_required: false,
        grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
      });
      const code = codeFrom(
        await authorize(audited.url, org.member.token, {
          client_id: rp.client_id,
          redirect_uri: REDIRECT,
          response_type: 'code',
          scope: 'openid offline_access',
          nonce: 'n',
          state: 's',
        }),
      );
      const exchanged = await tokenRequest(audited.url, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        client_id: rp.client_id,
        client_secret: rp.client_secret,
      });
      expect(exchanged.status).toBe(200);
      const refreshed = await tokenRequest(audited.url, {
        grant_type: 'refresh_token',
        refresh_token: exchanged.body.refresh_token,
        client_id: rp.client_id,
        client_secret: rp.client_secret,
      });
      expect(refreshed.status).toBe(200);
      expect(
        (
          await tokenRequest(audited.url, {
            grant_type: 'client_credentials',
            scope: 'reports',
            client_id: rp.client_id,
            client_secret: rp.client_secret,
          })
        ).status,
      ).toBe(200);
      const rows = await audited.base.db.auditLog.findMany({
        where: { action: 'oauth.token.issue', targetId: rp.id },
        orderBy: { id: 'asc' },
      });
      expect(rows.map((r) => [r.actorId, (r.details as { kind: string }).kind])).toEqual([
        [org.member.id, 'user'],
        [org.member.id, 'user'],
        [null, 'client_credentials'],
      ]);
    } finally {
      await audited.stop();
    }
  });
});
