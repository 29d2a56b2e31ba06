// Webhooks over REST and GraphQL: organization admins manage them, another tenant's id is 404, the URL must be
// https and public (the SSRF guard at creation and again at delivery, with a resolver standing in for DNS), events
// come from the catalog, the secret is never editable and is shown at creation and rotation only (an owner may
// reveal it again, audited), an organization has at most 20, and GET /api/v1/event-types lists the catalog.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { accessTokenOf, registerClient } from '../helpers/oauth.ts';
import { waitFor } from '../helpers/wait.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { EVENT_KINDS } from '../../schema/events/catalog.ts';
import { isPrivateAddress } from '../../schema/push/destination.ts';

const PUBLIC = '93.184.215.14';
/** A name's answers, as DNS would give them; rebind.test answers a public address once, then the metadata one. */
const names: Record<string, string[]> = {
  'hooks.example.test': [PUBLIC],
  'loopback.test': ['127.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'mixed.test': [PUBLIC, '10.0.0.7'],
  'mapped.test': ['::ffff:127.0.0.1'],
};
let rebindLookups = 0;

let ca: TestCa;
let receiver: HttpsReceiver;
let server: TestServer;
let platform: Client;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  ca = makeTestCa(['rebind.test']);
  receiver = await startHttpsReceiver(ca, 200);
  server = await startTestServer({
    role: 'all',
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false', WEBHOOK_CA_FILE: ca.caFile },
    webhookResolver: async (host) => {
      if (host === 'rebind.test') return [{ address: rebindLookups++ === 0 ? PUBLIC : '127.0.0.1', family: 4 }];
      const answers = names[host];
      if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
  });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, platform);
  other = await createTenant(server.url, platform);
});
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
  ca?.remove();
});

const create = (as: Client, body: Record<string, unknown>) =>
  as.post('/api/v1/webhooks', { url: 'https://hooks.example.test/tessera', events: ['user.created'], ...body });

describe('/api/v1/webhooks', () => {
  it('creates, reads, lists, edits, deactivates and deletes a webhook, with the spec field names', async () => {
    const admin = tenant.admin.api;
    const created = await create(admin, {
      events: ['member.added', 'organization.member.added'],
      description: 'CRM sync',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      organizationId: tenant.id,
      url: 'https://hooks.example.test/tessera',
      events: ['member.added', 'organization.member.added'],
      description: 'CRM sync',
      isActive: true,
      failing: false,
      failingSince: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = created.body.id;
    expect((await admin.get(`/api/v1/webhooks/${id}`)).body).toEqual({ ...created.body, secret: undefined });
    const listed = await admin.get('/api/v1/webhooks');
    expect(listed.body.webhooks.map((w: any) => w.id)).toContain(id);
    expect(listed.body.webhooks[0].secret).toBeUndefined();
    expect(listed.body.next_cursor).toBeNull();

    const edited = await admin.patch(`/api/v1/webhooks/${id}`, {
      events: ['user.updated'],
      description: 'changed',
      isActive: false,
    });
    expect(edited.body).toMatchObject({ events: ['user.updated'], description: 'changed', isActive: false });
    expect(edited.body.secret).toBeUndefined();
    // The secret is not editable: only regenerated.
    expect((await admin.patch(`/api/v1/webhooks/${id}`, { secret: 'whsec_mine' })).status).toBe(400);
    const rotated = await admin.post(`/api/v1/webhooks/${id}/rotate-secret`);
    expect(rotated.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    expect((await admin.get(`/api/v1/webhooks/${id}`)).body.secret).toBeUndefined();

    expect((await admin.delete(`/api/v1/webhooks/${id}`)).status).toBe(204);
    expect((await admin.get(`/api/v1/webhooks/${id}`)).status).toBe(404);
    expect((await admin.delete(`/api/v1/webhooks/${id}`)).status).toBe(404);
  });

  it('is for admins of the organization; another tenant does not see it exists', async () => {
    const created = await create(tenant.owner.api, {});
    const id = created.body.id;
    expect((await create(tenant.member.api, {})).status).toBe(403);
    expect((await tenant.member.api.get('/api/v1/webhooks')).status).toBe(403);
    for (const reply of [
      await other.admin.api.get(`/api/v1/webhooks/${id}`),
      await other.admin.api.patch(`/api/v1/webhooks/${id}`, { isActive: false }),
      await other.admin.api.delete(`/api/v1/webhooks/${id}`),
      await other.admin.api.post(`/api/v1/webhooks/${id}/rotate-secret`),
      await other.admin.api.post(`/api/v1/webhooks/${id}/test`, { event: 'user.created' }),
      await other.admin.api.get(`/api/v1/webhooks/${id}/deliveries`),
      await create(other.admin.api, { organizationId: tenant.id }),
    ])
      expect(reply.status, JSON.stringify(reply.body)).toBe(404);
    expect((await other.admin.api.get('/api/v1/webhooks')).body.webhooks.map((w: any) => w.id)).not.toContain(id);
  });

  it('refuses what is not an https URL or not an event of the catalog', async () => {
    const admin = tenant.admin.api;
    for (const [body, path] of [
      [{ url: 'http://hooks.example.test/x' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'https://user:pw@hooks.example.test/' }, 'url'],
      [{ url: 'https://nowhere.test/' }, 'url'],
      [{ events: [] }, 'events'],
      [{ events: ['user.exploded'] }, 'events.0'],
      [{ events: 'user.created' }, 'events'],
      [{ description: 'x'.repeat(501) }, 'description'],
    ] as const) {
      const reply = await create(admin, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.details.map((d: any) => d.path)).toContain(path);
    }
    expect((await admin.post('/api/v1/webhooks/no-such-id/test', { event: 'user.exploded' })).status).toBe(404);
  });

  it('refuses private, loopback, link-local, CGNAT and metadata destinations at creation and at edit', async () => {
    const admin = tenant.admin.api;
    const hosts = [
      'loopback.test',
      'metadata.test',
      'mixed.test',
      'mapped.test',
      '127.0.0.1',
      '10.1.2.3',
      '100.64.0.1',
      '169.254.169.254',
      '192.168.1.1',
      '172.16.0.1',
      '0.0.0.0',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '[::ffff:a9fe:a9fe]',
      '[fd00:ec2::254]',
      '[fe80::1]',
      '[64:ff9b::a9fe:a9fe]',
      '[::ffff:0:7f00:1]',
      '[64:ff9b:1::7f00:1]',
    ];
    for (const host of hosts) {
      const reply = await create(admin, { url: `https://${host}/hook` });
      expect(reply.status, host).toBe(400);
      expect(reply.body.details, host).toEqual([
        { path: 'url', message: 'resolves to a private, loopback, link-local or reserved address' },
      ]);
    }
    const ok = await create(admin, {});
    expect((await admin.patch(`/api/v1/webhooks/${ok.body.id}`, { url: 'https://metadata.test/' })).status).toBe(400);
    expect(isPrivateAddress(PUBLIC)).toBe(false);
    expect(isPrivateAddress('2606:4700::1111')).toBe(false);
  });

  it('checks the address again at delivery and connects only to the checked one (DNS rebinding)', async () => {
    const admin = tenant.admin.api;
    const hook = await create(admin, { url: receiver.url('rebind.test'), events: ['api_key.created'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    await admin.post('/api/v1/api-keys', { name: 'rebind' });
    const [delivery] = await waitFor(async () => {
      const list = (await admin.get(`/api/v1/webhooks/${hook.body.id}/deliveries`)).body.deliveries;
      return list[0]?.attempts.length ? list : undefined;
    });
    expect(delivery.attempts[0]).toMatchObject({
      success: false,
      statusCode: null,
      error: 'refused: the URL resolves to a private, loopback, link-local or reserved address',
    });
    expect(receiver.received).toEqual([]);
  });

  it('lists the catalog at /api/v1/event-types', async () => {
    const reply = await tenant.member.api.get('/api/v1/event-types');
    expect(reply.status).toBe(200);
    expect(reply.body.event_types.map((e: any) => e.kind)).toEqual(EVENT_KINDS);
    expect(reply.body.event_types.find((e: any) => e.kind === 'organization.member.added')).toEqual({
      kind: 'organization.member.added',
      group: 'Members & invitations',
      lists: ['B'],
      description: expect.any(String),
      example: {
        organization_id: expect.any(String),
        member_id: expect.any(String),
        user: { id: expect.any(String), email: expect.any(String), name: expect.any(String) },
        role: 'member',
      },
    });
    expect(reply.body.event_types.find((e: any) => e.kind === 'user.created').lists).toEqual(['A', 'B']);
  });

  it('offers the same through GraphQL', async () => {
    const gql = (query: string, variables = {}) => tenant.admin.api.post('/graphql', { query, variables });
    const created = await gql(
      'mutation($i: CreateWebhookInput!) { createWebhook(input: $i) { __typename ... on Webhook { id secret isActive } ... on UserError { code details { path } } } }',
      { i: { url: 'https://hooks.example.test/gql', events: ['subscription.created'] } },
    );
    expect(created.body.data.createWebhook).toMatchObject({ __typename: 'Webhook', isActive: true });
    const bad = await gql(
      'mutation($i: CreateWebhookInput!) { createWebhook(input: $i) { __typename ... on UserError { code details { path } } } }',
      { i: { url: 'https://loopback.test/', events: ['subscription.created'] } },
    );
    expect(bad.body.data.createWebhook).toEqual({
      __typename: 'UserError',
      code: 'invalid_request',
      details: [{ path: 'url' }],
    });
    const listed = await gql('{ webhooks { items { id events } } eventTypes { kind } }');
    expect(listed.body.data.webhooks.items.map((w: any) => w.id)).toContain(created.body.data.createWebhook.id);
    expect(listed.body.data.eventTypes).toHaveLength(EVENT_KINDS.length);
  });
});

describe('the number of webhooks of an organization', () => {
  /** Its webhooks as listed (one page of up to 100). */
  const count = async (as: Client) => (await as.get('/api/v1/webhooks?limit=100')).body.webhooks.length;
  const many = (as: Client, n: number, label: string) =>
    Promise.all(Array.from({ length: n }, (_, i) => create(as, { url: `https://hooks.example.test/${label}/${i}` })));

  it('is at most 20: the 21st create is 409 conflict on REST and a typed error on GraphQL, and deleting one makes room', async () => {
    // given an organization with 20 webhooks
    const crowded = await createTenant(server.url, platform);
    const admin = crowded.admin.api;
    for (const reply of await many(admin, 20, 'crowded')) expect(reply.status, JSON.stringify(reply.body)).toBe(201);

    // when a 21st is created, then it is refused, saying why and what to do
    const refused = await create(admin, { url: 'https://hooks.example.test/crowded/21' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body).toEqual({
      error: 'conflict',
      error_description: 'This organization has 20 webhooks, the most allowed; delete one first',
    });
    const gql = await admin.post('/graphql', {
      query:
        'mutation($i: CreateWebhookInput!) { createWebhook(input: $i) { __typename ... on Webhook { id } ... on UserError { code message } } }',
      variables: { i: { url: 'https://hooks.example.test/crowded/gql', events: ['user.created'] } },
    });
    expect(gql.body).toEqual({
      data: {
        createWebhook: {
          __typename: 'UserError',
          code: 'conflict',
          message: 'This organization has 20 webhooks, the most allowed; delete one first',
        },
      },
    });
    expect(await count(admin)).toBe(20);

    // and a platform admin creating one for it is refused too, while another organization is not affected
    expect((await create(platform, { organizationId: crowded.id })).status).toBe(409);
    expect((await create(other.admin.api, {})).status).toBe(201);

    // when one is deleted, then there is room for one again
    const [first] = (await admin.get('/api/v1/webhooks')).body.webhooks;
    expect((await admin.delete(`/api/v1/webhooks/${first.id}`)).status).toBe(204);
    expect((await create(admin, { url: 'https://hooks.example.test/crowded/again' })).status).toBe(201);
    expect((await create(admin, { url: 'https://hooks.example.test/crowded/over' })).status).toBe(409);
    expect(await count(admin)).toBe(20);
  });

  it('holds under concurrency: 20 creates at once when 19 exist leave exactly 20', async () => {
    // given an organization with 19 webhooks
    const raced = await createTenant(server.url, platform);
    const admin = raced.admin.api;
    for (const reply of await many(admin, 19, 'raced')) expect(reply.status, JSON.stringify(reply.body)).toBe(201);

    // when 20 creates arrive at once
    const replies = await many(admin, 20, 'burst');

    // then one is created, the other 19 are refused, and the organization has 20
    expect(replies.map((r) => r.status).sort()).toEqual([201, ...Array<number>(19).fill(409)]);
    expect(await count(admin)).toBe(20);
  });

  it('is WEBHOOK_LIMIT_PER_ORGANIZATION (20 when unset; a positive whole number)', async () => {
    const { loadConfig } = await import('../../server/config.ts');
    const env = { SECRET_KEY: 'a'.repeat(64), DATA_DIR: '/tmp' };
    expect((await loadConfig(env)).webhookLimitPerOrganization).toBe(20);
    expect((await loadConfig({ ...env, WEBHOOK_LIMIT_PER_ORGANIZATION: '3' })).webhookLimitPerOrganization).toBe(3);
    for (const bad of ['0', '-1', '2.5', 'many']) {
      await expect(loadConfig({ ...env, WEBHOOK_LIMIT_PER_ORGANIZATION: bad }), bad).rejects.toThrow(
        /WEBHOOK_LIMIT_PER_ORGANIZATION/,
      );
    }

    // and a service started with 2 refuses the third webhook of an organization
    const small = await startTestServer({
      env: { WEBHOOK_LIMIT_PER_ORGANIZATION: '2' },
      webhookResolver: async () => [{ address: PUBLIC, family: 4 }],
    });
    try {
      const admin = (await signIn(small.url, ADMIN.email, ADMIN.password)).api;
      const post = () =>
        admin.post('/api/v1/webhooks', { url: 'https://hooks.example.test/small', events: ['user.created'] });
      expect([(await post()).status, (await post()).status]).toEqual([201, 201]);
      const third = await post();
      expect(third.status).toBe(409);
      expect(third.body.error_description).toBe('This organization has 2 webhooks, the most allowed; delete one first');
    } finally {
      await small.stop();
    }
  });
});

describe('the signing secret', () => {
  let org: Tenant;
  beforeAll(async () => {
    org = await createTenant(server.url, platform);
  });
  const gql = (as: Client, query: string, variables = {}) => as.post('/graphql', { query, variables });
  const reveal = (as: Client, id: string) => as.post(`/api/v1/webhooks/${id}/reveal-secret`);
  const REVEAL =
    'mutation($id: ID!) { revealWebhookSecret(id: $id) { __typename ... on WebhookSecret { webhookId secret } ... on UserError { code } } }';
  const reveals = async (id: string) =>
    (
      await org.owner.api.get(
        `/api/v1/audit-logs?${new URLSearchParams({ action: 'webhook.secret.reveal', target_id: id })}`,
      )
    ).body.audit_logs;

  it('is in the create and rotate answers only: REST get, list and patch and GraphQL reads carry none', async () => {
    // given a webhook made through GraphQL, with its secret in the answer
    const admin = org.admin.api;
    const made = await gql(
      admin,
      'mutation($i: CreateWebhookInput!) { createWebhook(input: $i) { __typename ... on Webhook { id secret } } }',
      { i: { url: 'https://hooks.example.test/secret', events: ['user.created'] } },
    );
    const { id, secret } = made.body.data.createWebhook;
    expect(secret).toMatch(/^whsec_/);

    // then no read shows it: REST
    const read = await admin.get(`/api/v1/webhooks/${id}`);
    expect(read.status).toBe(200);
    expect(Object.keys(read.body)).not.toContain('secret');
    for (const w of (await admin.get('/api/v1/webhooks')).body.webhooks) expect(Object.keys(w)).not.toContain('secret');
    expect(Object.keys((await admin.patch(`/api/v1/webhooks/${id}`, { description: 'seen' })).body)).not.toContain(
      'secret',
    );
    // nor GraphQL, for an admin or a platform admin
    for (const as of [admin, org.owner.api, platform]) {
      const reads = await gql(
        as,
        'query($id: ID!) { webhook(id: $id) { id secret } webhooks(organizationId: $org) { items { id secret } } }'.replace(
          '$org',
          JSON.stringify(org.id),
        ),
        { id },
      );
      expect(reads.body.errors).toBeUndefined();
      expect(reads.body.data.webhook).toEqual({ id, secret: null });
      expect(reads.body.data.webhooks.items.map((w: any) => w.secret)).toEqual([null]);
    }
    const updated = await gql(
      admin,
      'mutation($id: ID!) { updateWebhook(id: $id, input: { isActive: false }) { ... on Webhook { secret } } }',
      { id },
    );
    expect(updated.body.data.updateWebhook).toEqual({ secret: null });
    // while rotating answers with the new one, once
    const rotated = await gql(
      admin,
      'mutation($id: ID!) { rotateWebhookSecret(id: $id) { ... on Webhook { secret } } }',
      { id },
    );
    expect(rotated.body.data.rotateWebhookSecret.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.rotateWebhookSecret.secret).not.toBe(secret);
    expect(
      (await gql(admin, 'query($id: ID!) { webhook(id: $id) { secret } }', { id })).body.data.webhook.secret,
    ).toBeNull();
  });

  it('is revealed to an owner and to a platform admin, each reveal audited without the secret', async () => {
    // given a webhook and its secret
    const created = await create(org.admin.api, { url: 'https://hooks.example.test/reveal' });
    const { id, secret } = created.body;

    // when its owner reveals it over REST, then it is the secret, and the trail names who and which
    const shown = await reveal(org.owner.api, id);
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    expect(shown.body).toEqual({ secret });
    expect(await reveals(id)).toEqual([
      expect.objectContaining({
        organization_id: org.id,
        action: 'webhook.secret.reveal',
        outcome: 'success',
        target_type: 'webhook',
        target_id: id,
        actor: expect.objectContaining({ type: 'user', id: org.owner.id }),
      }),
    ]);
    expect(JSON.stringify(await reveals(id))).not.toContain(secret);

    // and through GraphQL, and by a platform admin (an owner everywhere)
    const viaGql = await gql(org.owner.api, REVEAL, { id });
    expect(viaGql.body.data.revealWebhookSecret).toEqual({ __typename: 'WebhookSecret', webhookId: id, secret });
    expect((await reveal(platform, id)).body).toEqual({ secret });
    expect(await reveals(id)).toHaveLength(3);

    // and after a rotation it is the new one
    const rotated = await org.admin.api.post(`/api/v1/webhooks/${id}/rotate-secret`);
    expect((await reveal(org.owner.api, id)).body).toEqual({ secret: rotated.body.secret });
  });

  it('is refused to admins, members and API keys (403), to another organization (404) and to an OAuth access token (403)', async () => {
    // given a webhook
    const { id } = (await create(org.admin.api, { url: 'https://hooks.example.test/refused' })).body;
    const key = await org.owner.api.post('/api/v1/api-keys', { name: 'reveal' });
    expect(key.status).toBe(201);
    const apiKey = client(server.url, { apiKey: { key: key.body.key, secret: key.body.secret } });

    // an access token with the api scope, of the organization's owner
    const REDIRECT = 'https://rp.example.test/callback';
    const app = await registerClient(org.admin.api, {
      name: 'Reveal',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid', 'api'],
      consent_required: false,
    });
    const token = client(server.url, {
      token: await accessTokenOf(server.url, org.owner, app, REDIRECT, 'openid api'),
    });
    expect((await token.get(`/api/v1/webhooks/${id}`)).status).toBe(200);

    // then
    for (const [who, as, status] of [
      ['admin', org.admin.api, 403],
      ['member', org.member.api, 403],
      ['API key', apiKey, 403],
      ['access token', token, 403],
      ['another organization', other.owner.api, 404],
    ] as const) {
      const reply = await reveal(as, id);
      expect(reply.status, `${who}: ${JSON.stringify(reply.body)}`).toBe(status);
      expect(reply.body.secret, who).toBeUndefined();
      const viaGql = await gql(as, REVEAL, { id });
      expect(viaGql.body.errors?.[0]?.extensions?.code, who).toBe(status === 404 ? 'not_found' : 'forbidden');
      expect(JSON.stringify(viaGql.body), who).not.toContain('whsec_');
    }
    expect((await reveal(org.owner.api, 'no-such-webhook')).status).toBe(404);
    expect(await reveals(id)).toEqual([]);
  });
});
