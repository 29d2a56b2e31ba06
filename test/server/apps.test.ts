// The marketplace over REST against a real HTTPS sample app (test CA trusted through WEBHOOK_CA_FILE): registering
// and rotating, installing (the signed credential push, nothing left behind on a 500, a time-out or an unreachable
// host), launching with single sign-on, uninstalling (every token ends at once, the app is told through the queue),
// and who may do what.
import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { browserGet, followRedirect, sessionOf, tokenRequest } from '../helpers/oauth.ts';
import { makeTestCa, type TestCa } from '../helpers/https-receiver.ts';
import { startSampleApp, type SampleApp } from '../helpers/sample-app.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import { MINUTE, movableClock } from '../helpers/clock.ts';
import { waitFor } from '../helpers/wait.ts';
import { sweepDueNotifications } from '../../schema/modules/apps/notifications.service.ts';

const TIMEOUT_MS = 1500;
const clock = movableClock();
let ca: TestCa;
let sample: SampleApp;
let server: TestServer;
let platform: Client;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  ca = makeTestCa(['app.test', 'localhost']);
  server = await startTestServer({
    role: 'all',
    clock,
    env: { WEBHOOK_CA_FILE: ca.caFile, WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) },
    // app.test is the sample app; nowhere.test does not resolve.
    webhookResolver: async (host) => {
      if (host === 'nowhere.test') throw new Error('ENOTFOUND');
      return [{ address: '127.0.0.1', family: 4 }];
    },
  });
  sample = await startSampleApp(ca, server.url);
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, platform);
  other = await createTenant(server.url, platform);
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await sample?.close();
  ca?.remove();
});

/** The reply, checked against openapi.json. */
async function call(as: Client, method: string, path: string, body?: unknown) {
  const reply = await as.request(method, path, body);
  expectMatchesOpenApi(method, path, reply);
  return reply;
}
const expectStatus = (reply: { status: number; body: unknown }, status: number) =>
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);

async function registerApp(overrides: Record<string, unknown> = {}) {
  const reply = await call(platform, 'POST', '/api/v1/apps', {
    name: `Sample ${Math.random().toString(36).slice(2, 7)}`,
    description: 'A sample integration',
    webhook_url: sample.url('/hooks'),
    redirect_uris: [sample.url('/callback')],
    scopes: ['openid', 'email', 'offline_access'],
    homepage_url: 'https://app.test/',
    ...overrides,
  });
  expectStatus(reply, 201);
  return reply.body as { id: string; name: string; signing_secret: string; redirect_uris: string[] };
}

/** What the service holds for an organization's clients, from its database. */
const clientsOf = (organizationId: string) => server.base.db.oAuthClient.findMany({ where: { organizationId } });
const installationsOf = (organizationId: string) => server.base.db.installation.findMany({ where: { organizationId } });

/** GET an https URL of the sample app (app.test -> 127.0.0.1), trusting the test CA. */
function getApp(url: URL): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      { ca: ca.caPem, lookup: (_h, _o, cb) => (cb as any)(null, [{ address: '127.0.0.1', family: 4 }]) },
      (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
  });
}

describe('the catalog', () => {
  it('is written by platform admins, shown to every signed-in caller without the secret, and audited', async () => {
    const app = await registerApp();
    expect(app.signing_secret).toMatch(/^whsec_/);
    expectStatus(
      await call(tenant.admin.api, 'POST', '/api/v1/apps', {
        name: 'x',
        webhook_url: sample.url('/hooks'),
        redirect_uris: [sample.url('/cb')],
        scopes: ['openid'],
      }),
      403,
    );
    expectStatus(
      await call(platform, 'POST', '/api/v1/apps', {
        name: 'x',
        webhook_url: 'http://app.test/hooks',
        redirect_uris: ['https://app.test/cb'],
        scopes: ['openid'],
      }),
      400,
    );
    expectStatus(
      await call(platform, 'POST', '/api/v1/apps', {
        name: 'x',
        webhook_url: 'https://app.test/hooks',
        redirect_uris: 'https://app.test/cb',
        scopes: ['openid'],
      }),
      400,
    );
    expectStatus(
      await call(platform, 'POST', '/api/v1/apps', {
        name: 'x',
        webhook_url: 'https://nowhere.test/hooks',
        redirect_uris: ['https://app.test/cb'],
        scopes: ['openid'],
      }),
      400,
    );
    expectStatus(
      await call(platform, 'POST', '/api/v1/apps', {
        name: 'x',
        webhook_url: 'https://app.test/hooks',
        redirect_uris: ['https://app.test/cb'],
        scopes: ['no such scope'],
      }),
      400,
    );

    const listed = await call(tenant.member.api, 'GET', '/api/v1/apps');
    expectStatus(listed, 200);
    const entry = listed.body.apps.find((a: { id: string }) => a.id === app.id);
    expect(entry).toMatchObject({
      name: expect.any(String),
      webhook_url: sample.url('/hooks'),
      scopes: ['openid', 'email', 'offline_access'],
    });
    expect(JSON.stringify(listed.body)).not.toContain('whsec_');
    const one = await call(tenant.member.api, 'GET', `/api/v1/apps/${app.id}`);
    expectStatus(one, 200);
    expect(one.body).not.toHaveProperty('signing_secret');
    expectStatus(await call(tenant.member.api, 'GET', '/api/v1/apps/no-such-app'), 404);
    expectStatus(await call(client401(), 'GET', '/api/v1/apps'), 401);

    const patched = await call(platform, 'PATCH', `/api/v1/apps/${app.id}`, {
      description: 'Changed',
      homepage_url: null,
    });
    expectStatus(patched, 200);
    expect(patched.body).toMatchObject({ description: 'Changed', homepage_url: null });
    expectStatus(await call(tenant.owner.api, 'PATCH', `/api/v1/apps/${app.id}`, { description: 'Mine' }), 403);
    expectStatus(await call(platform, 'PATCH', `/api/v1/apps/${app.id}`, { signing_secret: 'chosen' }), 400);

    const rotated = await call(platform, 'POST', `/api/v1/apps/${app.id}/rotate-secret`);
    expectStatus(rotated, 200);
    expect(rotated.body.signing_secret).toMatch(/^whsec_/);
    expect(rotated.body.signing_secret).not.toBe(app.signing_secret);
    expectStatus(await call(tenant.owner.api, 'POST', `/api/v1/apps/${app.id}/rotate-secret`), 403);

    const audit = await platform.get(`/api/v1/audit-logs?target_id=${app.id}`);
    expect(audit.body.audit_logs.map((e: { action: string }) => e.action).sort()).toEqual([
      'app.create',
      'app.rotate_secret',
      'app.update',
    ]);
    expect(JSON.stringify(audit.body)).not.toContain('whsec_');

    expectStatus(await call(tenant.owner.api, 'DELETE', `/api/v1/apps/${app.id}`), 403);
    expectStatus(await call(platform, 'DELETE', `/api/v1/apps/${app.id}`), 204);
    expectStatus(await call(platform, 'DELETE', `/api/v1/apps/${app.id}`), 404);
  });

  it('offers the same operations through GraphQL', async () => {
    const created = await platform.post('/graphql', {
      query: `mutation($i: CreateAppInput!) { createApp(input: $i) { __typename ... on AppWithSecret { signingSecret app { id name scopes } } ... on UserError { code } } }`,
      variables: {
        i: {
          name: 'Via GraphQL',
          webhookUrl: sample.url('/hooks'),
          redirectUris: [sample.url('/callback')],
          scopes: ['openid'],
        },
      },
    });
    expect(created.body.data.createApp).toMatchObject({
      __typename: 'AppWithSecret',
      signingSecret: expect.stringMatching(/^whsec_/),
      app: { name: 'Via GraphQL' },
    });
    const id = created.body.data.createApp.app.id;
    const read = await tenant.member.api.post('/graphql', {
      query: `query($id: ID!) { app(id: $id) { id name } apps { items { id } } }`,
      variables: { id },
    });
    expect(read.body.data.app).toEqual({ id, name: 'Via GraphQL' });
    const forbidden = await tenant.admin.api.post('/graphql', {
      query: `mutation($id: ID!) { rotateAppSecret(id: $id) { __typename } }`,
      variables: { id },
    });
    expect(forbidden.body.errors[0].extensions.code).toBe('forbidden');
    const deleted = await platform.post('/graphql', {
      query: `mutation($id: ID!) { deleteApp(id: $id) { __typename } }`,
      variables: { id },
    });
    expect(deleted.body.data.deleteApp.__typename).toBe('MutationDeleteAppSuccess');
  });
});

const client401 = () => platform.as({});

describe('install, launch and uninstall', () => {
  it('pushes signed credentials, launches with single sign-on, and ends every token on uninstall', async () => {
    const app = await registerApp();
    sample.setSigningSecret(app.signing_secret);
    sample.mode('normal');

    // A member cannot install; another organization's admin cannot install into this one.
    expectStatus(await call(tenant.member.api, 'POST', `/api/v1/apps/${app.id}/install`), 403);
    expectStatus(
      await call(other.admin.api, 'POST', `/api/v1/apps/${app.id}/install`, { organization_id: tenant.id }),
      404,
    );
    expectStatus(await call(tenant.admin.api, 'POST', '/api/v1/apps/no-such-app/install'), 404);

    const installed = await call(tenant.admin.api, 'POST', `/api/v1/apps/${app.id}/install`);
    expectStatus(installed, 201);
    const inst = installed.body;
    expect(inst).toMatchObject({
      id: expect.any(String),
      app_id: app.id,
      organization_id: tenant.id,
      client_id: expect.stringMatching(/^tsc_/),
      installed_at: expect.any(String),
    });

    // The push: signed with the app's secret (by hand and by the Standard Webhooks verifier), and stored by the app.
    const push = sample.notices.find(
      (n) => n.event === 'app.installed' && JSON.parse(n.body).clientId === inst.client_id,
    )!;
    expect(push.status).toBe(200);
    expect(JSON.parse(push.body)).toEqual({
      event: 'app.installed',
      organizationId: tenant.id,
      clientId: inst.client_id,
      clientSecret: expect.stringMatching(/^tscs_/),
    });
    expect(push.headers['x-service-event']).toBe('app.installed');
    expect(push.headers['x-service-delivery']).toEqual(expect.any(String));
    expect(
      new StandardWebhook(app.signing_secret).verify(push.body, push.headers as Record<string, string>),
    ).toMatchObject({ event: 'app.installed' });
    expect(sample.credentials.get(tenant.id)?.clientId).toBe(inst.client_id);

    // The client: owned by the organization, the app's redirect URIs and scopes, no consent, enabled.
    const [client] = await clientsOf(tenant.id);
    expect(client).toMatchObject({
      clientId: inst.client_id,
      name: expect.stringMatching(/^Sample/),
      redirectUris: app.redirect_uris,
      allowedScopes: ['openid', 'email', 'offline_access'],
      consentRequired: false,
      enabled: true,
    });
    const events = await server.base.db.event.findMany({
      where: { organizationId: tenant.id, kind: { in: ['oauth.client.created', 'oauth_client.created'] } },
    });
    expect(events.map((e) => e.kind).sort()).toEqual(['oauth.client.created', 'oauth_client.created']);

    expectStatus(await call(tenant.admin.api, 'POST', `/api/v1/apps/${app.id}/install`), 409);
    expectStatus(await call(platform, 'DELETE', `/api/v1/apps/${app.id}`), 409);

    // Every member sees it; another organization does not.
    const listed = await call(tenant.member.api, 'GET', '/api/v1/installations');
    expectStatus(listed, 200);
    expect(listed.body.installations).toEqual([expect.objectContaining({ id: inst.id, launch_url: inst.launch_url })]);
    expectStatus(await call(tenant.member.api, 'GET', `/api/v1/installations/${inst.id}`), 200);
    expectStatus(await call(other.admin.api, 'GET', `/api/v1/installations/${inst.id}`), 404);
    expect((await call(other.admin.api, 'GET', '/api/v1/installations')).body.installations).toEqual([]);
    expectStatus(await call(other.admin.api, 'GET', `/api/v1/installations?organization_id=${tenant.id}`), 404);

    // Launch: the authorization URL, state = the organization, no nonce; back at the app with a code, no consent page.
    const launch = new URL(inst.launch_url);
    expect(Object.fromEntries(launch.searchParams)).toEqual({
      response_type: 'code',
      client_id: inst.client_id,
      redirect_uri: app.redirect_uris[0],
      scope: 'openid email offline_access',
      state: tenant.id,
    });
    const back = await followRedirect(
      new URL(`${launch.pathname}${launch.search}`, server.url),
      await sessionOf(server.url, tenant.member),
    );
    expect(`${back.origin}${back.pathname}`).toBe(app.redirect_uris[0]);
    expect(back.searchParams.get('state')).toBe(tenant.id);
    const shown = await getApp(back);
    expect(shown.status, shown.body).toBe(200);
    expect(shown.body).toContain(tenant.member.email);
    const { tokens } = sample.launches.at(-1)!;
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const userinfo = () =>
      fetch(new URL('/oauth/userinfo', server.url), { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect((await userinfo()).status).toBe(200);

    // The member sees the opened app under their connected apps, though it asked no consent, and can end its access.
    const memberGraphql = (query: string, variables = {}) => tenant.member.api.post('/graphql', { query, variables });
    const apps = await memberGraphql('query { connectedApps { clientId name scopes } }');
    expect(apps.body.data.connectedApps).toEqual([
      { clientId: inst.client_id, name: app.name, scopes: ['openid', 'email', 'offline_access'] },
    ]);
    const ended = await memberGraphql('mutation($c: String!) { revokeConnectedApp(clientId: $c) { __typename } }', {
      c: inst.client_id,
    });
    expect(ended.body.errors).toBeUndefined();
    expect((await userinfo()).status).toBe(401);
    expect((await memberGraphql('query { connectedApps { clientId } }')).body.data.connectedApps).toEqual([]);
    const relaunched = await followRedirect(
      new URL(`${launch.pathname}${launch.search}`, server.url),
      await sessionOf(server.url, tenant.member),
    );
    expect(relaunched.searchParams.get('state')).toBe(tenant.id);
    expect((await getApp(relaunched)).status).toBe(200);

    // Uninstall: admins only; every token of the client ends at once; the installation is gone.
    expectStatus(await call(tenant.member.api, 'DELETE', `/api/v1/installations/${inst.id}`), 403);
    expectStatus(await call(other.admin.api, 'DELETE', `/api/v1/installations/${inst.id}`), 404);
    const old = sample.credentials.get(tenant.id)!;
    expectStatus(await call(tenant.admin.api, 'DELETE', `/api/v1/installations/${inst.id}`), 204);
    expect((await userinfo()).status).toBe(401);
    const refresh = (creds: { clientId: string; clientSecret: string }) =>
      tokenRequest(server.url, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: creds.clientId,
        client_secret: creds.clientSecret,
      });
    const refused = await refresh(old);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_client');
    expectStatus(await call(tenant.member.api, 'GET', `/api/v1/installations/${inst.id}`), 404);
    expectStatus(await call(tenant.admin.api, 'DELETE', `/api/v1/installations/${inst.id}`), 404);
    expect(await clientsOf(tenant.id)).toEqual([]);
    const deleted = await server.base.db.event.findMany({
      where: { organizationId: tenant.id, kind: { in: ['oauth.client.deleted', 'oauth_client.deleted'] } },
    });
    expect(deleted.map((e) => e.kind).sort()).toEqual(['oauth.client.deleted', 'oauth_client.deleted']);

    // The app is told through the queue, signed like the push, and forgets the organization.
    const notice = await waitFor(() => sample.notices.find((n) => n.event === 'app.uninstalled' && n.status === 200));
    expect(JSON.parse(notice.body)).toEqual({ event: 'app.uninstalled', organizationId: tenant.id });
    expect(
      new StandardWebhook(app.signing_secret).verify(notice.body, notice.headers as Record<string, string>),
    ).toMatchObject({ event: 'app.uninstalled' });
    expect(sample.credentials.has(tenant.id)).toBe(false);

    // Installing again pushes new credentials; the old refresh token means nothing to the new client.
    const again = await call(tenant.admin.api, 'POST', `/api/v1/apps/${app.id}/install`);
    expectStatus(again, 201);
    const fresh = sample.credentials.get(tenant.id)!;
    expect(fresh.clientId).toBe(again.body.client_id);
    expect(fresh.clientId).not.toBe(old.clientId);
    expect(fresh.clientSecret).not.toBe(old.clientSecret);
    const stale = await refresh(fresh);
    expect(stale.status).toBe(400);
    expect(stale.body.error).toBe('invalid_grant');

    const audit = await tenant.admin.api.get('/api/v1/audit-logs?action=app.install');
    expect(audit.body.audit_logs.length).toBe(2);
    expect((await tenant.admin.api.get('/api/v1/audit-logs?action=app.uninstall')).body.audit_logs.length).toBe(1);
    expectStatus(await call(tenant.admin.api, 'DELETE', `/api/v1/installations/${again.body.id}`), 204);
  });

  it('retries the uninstall notice on the webhook schedule until the app takes it', async () => {
    const org = await createTenant(server.url, platform);
    const app = await registerApp();
    sample.setSigningSecret(app.signing_secret);
    sample.mode('normal');
    const inst = await call(org.admin.api, 'POST', `/api/v1/apps/${app.id}/install`);
    expectStatus(inst, 201);
    sample.mode(503);
    expectStatus(await call(org.admin.api, 'DELETE', `/api/v1/installations/${inst.body.id}`), 204);
    const notification = await waitFor(async () => {
      const [n] = await server.base.db.appNotification.findMany({ where: { organizationId: org.id } });
      return n && n.attempts >= 1 ? n : undefined;
    });
    expect(notification).toMatchObject({ status: 'pending', lastStatusCode: 503 });
    expect(notification.nextAttemptAt!.getTime() - notification.updatedAt.getTime()).toBeGreaterThan(59_000);
    // Not due yet by the service clock; then due after a minute.
    expect(await sweepDueNotifications({ db: server.base.db, clock })).toBe(0);
    sample.mode('normal');
    clock.advance(MINUTE + 1);
    expect(await sweepDueNotifications({ db: server.base.db, clock })).toBe(1);
    const delivered = await waitFor(async () => {
      const n = await server.base.db.appNotification.findUniqueOrThrow({ where: { id: notification.id } });
      return n.status === 'delivered' ? n : undefined;
    });
    expect(delivered.attempts).toBe(2);
    const bodies = sample.notices
      .filter((n) => n.event === 'app.uninstalled' && JSON.parse(n.body).organizationId === org.id)
      .map((n) => n.body);
    expect(new Set(bodies).size).toBe(1);
    expect(sample.credentials.has(org.id)).toBe(false);
  });
});

describe('an install the app does not accept leaves nothing', () => {
  let app: { id: string; signing_secret: string };
  beforeAll(async () => {
    app = await registerApp();
    sample.setSigningSecret(app.signing_secret);
  });

  async function expectNothingInstalled(reply: { status: number; body: any }) {
    expectStatus(reply, 502);
    expect(reply.body.error).toBe('app_unreachable');
    expect(await clientsOf(tenant.id)).toEqual([]);
    expect(await installationsOf(tenant.id)).toEqual([]);
    expect((await call(tenant.member.api, 'GET', '/api/v1/installations')).body.installations).toEqual([]);
  }

  it('when the app answers 500', async () => {
    sample.mode(500);
    await expectNothingInstalled(await call(tenant.admin.api, 'POST', `/api/v1/apps/${app.id}/install`));
    expect(
      (await tenant.admin.api.get('/api/v1/audit-logs?action=app.install&outcome=failure')).body.audit_logs.length,
    ).toBeGreaterThan(0);
  });

  it('when the app does not answer within WEBHOOK_TIMEOUT_MS', async () => {
    sample.mode('hang');
    const started = Date.now();
    const reply = await call(tenant.admin.api, 'POST', `/api/v1/apps/${app.id}/install`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(reply.body.error_description).toContain(`within ${TIMEOUT_MS} ms`);
    await expectNothingInstalled(reply);
  });

  it('when its host does not resolve, or nothing listens there', async () => {
    sample.mode('normal');
    const nowhere = await registerApp({ webhook_url: sample.url('/hooks') });
    await server.base.db.app.update({ where: { id: nowhere.id }, data: { webhookUrl: 'https://nowhere.test/hooks' } });
    const unresolved = await call(tenant.admin.api, 'POST', `/api/v1/apps/${nowhere.id}/install`);
    await expectNothingInstalled(unresolved);
    // The admin is told where it went and why, so that a typo can be told from an app that is down.
    expect(unresolved.body.error_description).toContain('at https://nowhere.test/hooks');
    const closed = await registerApp({ webhook_url: 'https://app.test:1/hooks' });
    const refused = await call(tenant.admin.api, 'POST', `/api/v1/apps/${closed.id}/install`);
    await expectNothingInstalled(refused);
    expect(refused.body.error_description).toMatch(
      /at https:\/\/app\.test:1\/hooks \(it could not be reached: ECONNREFUSED/,
    );
  });

  it('when the app refuses the signature: after a rotation the old secret no longer signs', async () => {
    sample.mode('normal');
    const rotated = await call(platform, 'POST', `/api/v1/apps/${app.id}/rotate-secret`);
    expectStatus(rotated, 200);
    // The app still holds the old secret: it answers 401 to the push signed with the new one.
    await expectNothingInstalled(await call(tenant.admin.api, 'POST', `/api/v1/apps/${app.id}/install`));
    expect(sample.notices.at(-1)!.status).toBe(401);
    sample.setSigningSecret(rotated.body.signing_secret);
    const installed = await call(tenant.admin.api, 'POST', `/api/v1/apps/${app.id}/install`);
    expectStatus(installed, 201);
    expectStatus(await call(tenant.admin.api, 'DELETE', `/api/v1/installations/${installed.body.id}`), 204);
  });

  it('when the SSRF guard refuses the address', async () => {
    const guarded = await startTestServer({
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_CA_FILE: ca.caFile },
    });
    try {
      const admin = (await signIn(guarded.url, ADMIN.email, ADMIN.password)).api;
      // Registration refuses a loopback address outright...
      expectStatus(
        await admin.post('/api/v1/apps', {
          name: 'Inside',
          webhook_url: sample.url('/hooks', 'localhost'),
          redirect_uris: [sample.url('/callback')],
          scopes: ['openid'],
        }),
        400,
      );
      // ...and an app whose address became private since is refused at install, with nothing left.
      const created = await admin.post('/api/v1/apps', {
        name: 'Was public',
        webhook_url: 'https://93.184.215.14/hooks',
        redirect_uris: [sample.url('/callback')],
        scopes: ['openid'],
      });
      expectStatus(created, 201);
      await guarded.base.db.app.update({
        where: { id: created.body.id },
        data: { webhookUrl: sample.url('/hooks', '127.0.0.1') },
      });
      const reply = await admin.post(`/api/v1/apps/${created.body.id}/install`);
      expectStatus(reply, 502);
      expect(reply.body.error_description).toContain('private');
      // Tessera's own command-line client is the one client there (cli-client.ts).
      expect(await guarded.base.db.oAuthClient.count({ where: { platformWide: false } })).toBe(0);
      expect(await guarded.base.db.installation.count()).toBe(0);
    } finally {
      await guarded.stop();
    }
  });
});

describe('changing an installed app', () => {
  it('applies new redirect URIs and scopes to every installed client at once', async () => {
    const app = await registerApp();
    sample.setSigningSecret(app.signing_secret);
    sample.mode('normal');
    const a = await call(tenant.admin.api, 'POST', `/api/v1/apps/${app.id}/install`);
    const b = await call(other.admin.api, 'POST', `/api/v1/apps/${app.id}/install`);
    expectStatus(a, 201);
    expectStatus(b, 201);
    const redirect = sample.url('/callback2');
    expectStatus(
      await call(platform, 'PATCH', `/api/v1/apps/${app.id}`, {
        redirect_uris: [redirect],
        scopes: ['openid', 'profile'],
      }),
      200,
    );
    for (const org of [tenant.id, other.id]) {
      const [client] = await clientsOf(org);
      expect(client).toMatchObject({ redirectUris: [redirect], allowedScopes: ['openid', 'profile'] });
    }
    const launch = new URL(
      (await call(tenant.member.api, 'GET', `/api/v1/installations/${a.body.id}`)).body.launch_url,
    );
    expect(launch.searchParams.get('redirect_uri')).toBe(redirect);
    expect(launch.searchParams.get('scope')).toBe('openid profile');
    // The old redirect URI is refused at once.
    const res = await browserGet(
      new URL(
        `/oauth/authorize?${new URLSearchParams({ ...Object.fromEntries(launch.searchParams), redirect_uri: app.redirect_uris[0]! })}`,
        server.url,
      ),
      await sessionOf(server.url, tenant.member),
    );
    expect(res.status).toBe(400);
    expectStatus(await call(tenant.admin.api, 'DELETE', `/api/v1/installations/${a.body.id}`), 204);
    expectStatus(await call(other.admin.api, 'DELETE', `/api/v1/installations/${b.body.id}`), 204);
    expectStatus(await call(platform, 'DELETE', `/api/v1/apps/${app.id}`), 204);
  });
});
