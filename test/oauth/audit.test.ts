// Issue 3 asks for an audit trail of authorizations, consents, issued tokens and failed client authentication.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { authorize, codeFrom, decideConsent, registerClient, tokenRequest, type RegisteredClient } from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/cb';
let server: TestServer;
let tenant: Tenant;
let app: RegisteredClient;

beforeAll(async () => {
  server = await startTestServer();
  const admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, admin);
  app = await registerClient(tenant.admin.api, { name: 'Audited', redirect_uris: [REDIRECT], allowed_scopes: ['openid', 'email'] });
});
afterAll(() => server?.stop());

const audit = (action: string) =>
  server.base.db.auditLog.findMany({ where: { action, targetId: app.id }, orderBy: { createdAt: 'asc' } });

const token = (params: Record<string, string>) => tokenRequest(server.url, params);

describe('audit of the OAuth flow', () => {
  it('records consent given, the authorization, the tokens, a replayed code, failed client authentication and consent revoked', async () => {
    const member = tenant.member;
    const consentPage = await authorize(server.url, member.token, { client_id: app.client_id, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid email', nonce: 'n', state: 's' });
    const code = codeFrom(await decideConsent(server.url, member.token, consentPage));
    const exchange = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: app.client_id, client_secret: app.client_secret };
    expect((await token(exchange)).status).toBe(200);
    expect((await token(exchange)).status).toBe(400);
    expect((await token({ ...exchange, client_secret: 'wrong' })).status).toBe(401);
    expect((await member.api.post('/graphql', { query: 'mutation($c: String!) { revokeConnectedApp(clientId: $c) { __typename } }', variables: { c: app.client_id } })).status).toBe(200);

    const consent = await audit('oauth.consent.grant');
    expect(consent).toEqual([expect.objectContaining({ actorId: member.id, organizationId: tenant.id, outcome: 'success' })]);
    expect(consent[0]!.details).toMatchObject({ scope: 'openid email' });
    expect(await audit('oauth.authorize')).toEqual([expect.objectContaining({ actorId: member.id, organizationId: tenant.id })]);
    expect(await audit('oauth.token.issue')).toEqual([expect.objectContaining({ actorId: member.id, organizationId: tenant.id })]);
    expect(await audit('oauth.code.replay')).toEqual([expect.objectContaining({ outcome: 'failure', organizationId: tenant.id })]);
    const failed = await audit('oauth.client_auth');
    expect(failed).toEqual([expect.objectContaining({ outcome: 'failure', organizationId: tenant.id })]);
    expect(failed[0]!.details).toMatchObject({ reason: 'bad_secret' });
    expect(await audit('oauth.consent.revoke')).toHaveLength(1);
    // Every entry says where it came from.
    const all = await server.base.db.auditLog.findMany({ where: { targetId: app.id } });
    expect(all.every((row) => row.ip !== null)).toBe(true);
  });
});
