// Every operation emits the kinds of the catalog that describe it (docs/architecture.md#events-webhooks-and-the-outbox), checked in the events table after
// each call through the real API: every kind is in the catalog, its data has the keys of the catalog's example,
// list B data is snake_case and list A camelCase, the three shapes the interface gives are exact, and events about a
// person reach each organization the person belongs to. Then the OAuth hot path (raw SQL) delivers the same
// envelope text as emitEvent to a real HTTPS receiver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_CATALOG, EVENT_KINDS, isEventKind, type EventKind } from '../../schema/events/catalog.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { mailedInvitationToken, PASSWORD } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  decideConsent,
  exchangeCode,
  registerClient,
  tokenRequest,
  type ClientCredentials,
} from '../helpers/oauth.ts';
import { DAY, movableClock } from '../helpers/clock.ts';
import { runTaskNow } from '../helpers/worker.ts';
import { codeAt } from '../helpers/totp.ts';
import { waitFor } from '../helpers/wait.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';

const clock = movableClock();
const REDIRECT = 'https://app.example.test/cb';
let server: TestServer;
let admin: Client;
let ca: TestCa;
let receiver: HttpsReceiver;

beforeAll(async () => {
  ca = makeTestCa();
  receiver = await startHttpsReceiver(ca, 200);
  server = await startTestServer({
    role: 'all',
    clock,
    env: { WEBHOOK_CA_FILE: ca.caFile },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
});
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
  ca?.remove();
});

interface Emitted {
  id: string;
  kind: string;
  createdAt: Date;
  organizationId: string | null;
  body: string;
  envelope: {
    id: string;
    event: string;
    timestamp: string;
    organization: { id: string; name: string };
    data: Record<string, any>;
  };
}
const all: Emitted[] = [];
let seen = new Set<string>();

/** Runs `operation` and returns the events it wrote (rows that were not there before). */
async function emitted(operation: () => Promise<unknown>): Promise<Emitted[]> {
  const before = new Set((await server.base.db.event.findMany({ select: { id: true } })).map((e) => e.id));
  await operation();
  const rows = await server.base.db.event.findMany({ where: { id: { notIn: [...before] } }, orderBy: { id: 'asc' } });
  const fresh = rows
    .filter((r) => !seen.has(r.id))
    .map((r) => ({
      id: r.id,
      kind: r.kind,
      organizationId: r.organizationId,
      createdAt: r.createdAt,
      body: r.body,
      envelope: JSON.parse(r.body),
    }));
  seen = new Set([...seen, ...fresh.map((e) => e.envelope.id)]);
  all.push(...fresh);
  return fresh;
}
const kindsOf = (events: Emitted[]) => events.map((e) => e.kind).sort();
/** The token of the newest /verify-email link mailed to `to`: with no SMTP_URL, mail stays in the mailbox, bodies kept. */
async function mailedToken(to: string, kind: 'email_verification' | 'email_change'): Promise<string> {
  const mail = await server.base.db.mail.findFirstOrThrow({ where: { toAddress: to, kind }, orderBy: { id: 'desc' } });
  const link = mail.textBody
    ?.match(/https?:\/\/\S+/g)
    ?.map((u) => new URL(u))
    .find((u) => u.pathname === '/verify-email');
  if (!link) throw new Error(`no /verify-email link in the mail "${mail.subject}":\n${mail.textBody}`);
  return link.searchParams.get('token')!;
}
const ok = async <T extends { status: number; body: any }>(reply: Promise<T>, status = 200) => {
  const r = await reply;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
};

/** The key structure of a JSON value: the same keys at every level where both sides are objects. */
function sameKeys(actual: unknown, example: unknown, path = 'data'): void {
  if (Array.isArray(actual) && Array.isArray(example)) return;
  if (isObject(actual) && isObject(example)) {
    expect(Object.keys(actual).sort(), path).toEqual(Object.keys(example).sort());
    for (const key of Object.keys(example)) sameKeys(actual[key], example[key], `${path}.${key}`);
  }
}
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (!isObject(value)) return [];
  return Object.entries(value).flatMap(([k, v]) => [k, ...keysOf(v)]);
}

describe('the event catalog', () => {
  let a: { id: string; name: string };
  let b: { id: string; name: string };
  let person: { id: string; email: string; api: Client };
  let password = PASSWORD;
  /** The address the person was invited at (it moves to another below). */
  let invited = '';

  it('emits, for every operation, each kind that describes it', async () => {
    // Organizations
    let created: any;
    let events = await emitted(
      async () => (created = await ok(admin.post('/v1/organizations', { name: 'Catalog A' }), 201)),
    );
    a = { id: created.id, name: 'Catalog A' };
    expect(kindsOf(events)).toEqual(['member.added', 'organization.created', 'organization.member.added']);
    b = await ok(admin.post('/v1/organizations', { name: 'Catalog B' }), 201);
    events = await emitted(() => ok(admin.patch(`/v1/organizations/${a.id}`, { name: 'Catalog A2' })));
    a.name = 'Catalog A2';
    expect(kindsOf(events)).toEqual(['organization.updated']);

    // Invitations: a new account joins A; the person then joins B with its password.
    let email = `catalog-${Date.now()}@example.test`;
    invited = email;
    let invitation: any;
    events = await emitted(
      async () =>
        (invitation = await ok(admin.post(`/v1/organizations/${a.id}/invitations`, { email, role: 'member' }), 201)),
    );
    expect(kindsOf(events)).toEqual(['member.invitation.sent']);
    let accepted: any;
    // From the link mailed to the address, which proves it (the one the inviter is shown would not).
    const mailed = await mailedInvitationToken(server.url, email);
    expect(mailed).not.toBe(invitation.token);
    events = await emitted(
      async () =>
        (accepted = await ok(
          client(server.url).post('/api/v1/invitations/accept', { token: mailed, name: 'Ada', password }),
        )),
    );
    expect(kindsOf(events)).toEqual([
      'member.added',
      'member.invitation.accepted',
      'organization.member.added',
      'session.created',
      'user.created',
    ]);
    expect(events.every((e) => e.organizationId === a.id)).toBe(true);
    person = { id: accepted.user.id, email, api: client(server.url, { token: accepted.token }) };
    const toB = await ok(admin.post(`/v1/organizations/${b.id}/invitations`, { email, role: 'member' }), 201);
    events = await emitted(() =>
      ok(client(server.url).post('/api/v1/invitations/accept', { token: toB.token, password })),
    );
    // The password signs in and joins in one transaction: the session, made once the person is in B, reaches A and B.
    expect(kindsOf(events)).toEqual([
      'member.added',
      'member.invitation.accepted',
      'organization.member.added',
      'session.created',
      'session.created',
    ]);

    // Events about the person reach both of its organizations, once each.
    const fannedOut = (list: Emitted[], kind: string) =>
      list
        .filter((e) => e.kind === kind)
        .map((e) => e.envelope.organization)
        .sort((x, y) => x.id.localeCompare(y.id));
    const both = [a, b].map((o) => ({ id: o.id, name: o.name })).sort((x, y) => x.id.localeCompare(y.id));
    let signedIn: any;
    events = await emitted(
      async () => (signedIn = await ok(client(server.url).post('/api/v1/auth/login', { email, password }))),
    );
    expect(kindsOf(events)).toEqual(['session.created', 'session.created']);
    expect(fannedOut(events, 'session.created')).toEqual(both);
    person.api = client(server.url, { token: signedIn.token });
    events = await emitted(() => ok(person.api.patch('/api/v1/users/me', { name: 'Ada L.' })));
    expect(kindsOf(events)).toEqual(['user.updated', 'user.updated']);
    expect(fannedOut(events, 'user.updated')).toEqual(both);
    const newPassword = 'another long enough password';
    events = await emitted(() =>
      ok(person.api.patch('/api/v1/users/me', { current_password: password, password: newPassword })),
    );
    password = newPassword;
    expect(kindsOf(events)).toEqual([
      'session.created',
      'session.created',
      'user.password.changed',
      'user.password.changed',
    ]);
    person.api = (await signIn(server.url, email, password)).api;

    // The address. An account made by accepting an invitation starts verified; a platform admin unmarks and marks it.
    events = await emitted(() => ok(admin.patch(`/v1/users/${person.id}`, { email_verified: false })));
    expect(kindsOf(events)).toEqual(['user.updated', 'user.updated']);
    events = await emitted(() => ok(admin.patch(`/v1/users/${person.id}`, { email_verified: true })));
    expect(kindsOf(events)).toEqual(['user.email.verified', 'user.email.verified', 'user.updated', 'user.updated']);
    expect(fannedOut(events, 'user.email.verified')).toEqual(both);
    // The person proves it with a mailed link: asking for one emits nothing, using it the verification.
    await ok(admin.patch(`/v1/users/${person.id}`, { email_verified: false }));
    events = await emitted(() => ok(person.api.post('/api/v1/users/me/email/verify-request'), 202));
    expect(events).toEqual([]);
    const verification = await mailedToken(email, 'email_verification');
    events = await emitted(() => ok(client(server.url).post('/api/v1/auth/verify-email', { token: verification })));
    expect(kindsOf(events)).toEqual(['user.email.verified', 'user.email.verified']);
    expect(fannedOut(events, 'user.email.verified')).toEqual(both);
    // A new address: nothing until the link mailed there is used, then the change and the verification.
    const moved = `catalog-moved-${Date.now()}@example.test`;
    events = await emitted(() =>
      ok(person.api.patch('/api/v1/users/me', { email: moved, current_password: password })),
    );
    expect(events).toEqual([]);
    const change = await mailedToken(moved, 'email_change');
    events = await emitted(() => ok(client(server.url).post('/api/v1/auth/verify-email', { token: change })));
    expect(kindsOf(events)).toEqual(['user.email.verified', 'user.email.verified', 'user.updated', 'user.updated']);
    expect(fannedOut(events, 'user.updated')).toEqual(both);
    expect(
      events.filter((e) => e.kind === 'user.updated').map((e) => [e.envelope.data.user.email, e.envelope.data.changes]),
    ).toEqual([
      [moved, ['email']],
      [moved, ['email']],
    ]);
    email = moved;
    person.email = moved;

    // Second factors: starting to set up an authenticator app emits nothing; confirming the first factor emits
    // 2fa.enabled, removing the last 2fa.disabled, to both organizations of the person.
    let enrolment: any;
    events = await emitted(
      async () => (enrolment = await ok(person.api.post('/api/v1/users/me/mfa/totp', { password }), 201)),
    );
    expect(events).toEqual([]);
    events = await emitted(() =>
      ok(person.api.post('/api/v1/users/me/mfa/totp/confirm', { code: codeAt(clock, enrolment.secret) })),
    );
    expect(kindsOf(events)).toEqual(['2fa.enabled', '2fa.enabled']);
    expect(fannedOut(events, '2fa.enabled')).toEqual(both);
    events = await emitted(() => ok(person.api.delete('/api/v1/users/me/mfa/totp', { password })));
    expect(kindsOf(events)).toEqual(['2fa.disabled', '2fa.disabled']);
    expect(fannedOut(events, '2fa.disabled')).toEqual(both);

    // Members
    events = await emitted(() => ok(admin.patch(`/v1/organizations/${a.id}/members/${person.id}`, { role: 'admin' })));
    expect(kindsOf(events)).toEqual(['member.role.changed', 'organization.member.role_changed']);

    // API keys
    let key: any;
    events = await emitted(
      async () => (key = await ok(admin.post('/api/v1/api-keys', { name: 'catalog', organization_id: a.id }), 201)),
    );
    expect(kindsOf(events)).toEqual(['api_key.created']);
    events = await emitted(() => ok(admin.delete(`/api/v1/api-keys/${key.id}`), 204));
    expect(kindsOf(events)).toEqual(['api_key.revoked']);

    // OAuth: clients, authorization (directly and on consent), tokens, revocation (RFC 7009). The hot paths store
    // an event only when a webhook will receive it (the last test here): A has one for their kinds.
    await ok(
      admin.post('/api/v1/webhooks', {
        url: receiver.url('receiver.test', '/catalog-oauth'),
        organizationId: a.id,
        events: ['oauth.authorization.granted', 'oauth.token.issued', 'oauth_client.token_revoked'],
      }),
      201,
    );
    let app: any;
    events = await emitted(
      async () =>
        (app = await registerClient(person.api, {
          name: 'Catalog app',
          redirect_uris: [REDIRECT],
          allowed_scopes: ['openid', 'email'],
          consent_required: false,
          organization_id: a.id,
        })),
    );
    expect(kindsOf(events)).toEqual(['oauth.client.created', 'oauth_client.created']);
    const session = (await signIn(server.url, email, password)).login.token as string;
    let code = '';
    const params = {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid email',
      nonce: 'n',
    };
    events = await emitted(async () => (code = codeFrom(await authorize(server.url, session, params))));
    expect(kindsOf(events)).toEqual(['oauth.authorization.granted']);
    let tokens: any;
    events = await emitted(async () => (tokens = await ok(exchangeCode(server.url, app, code, REDIRECT))));
    expect(kindsOf(events)).toEqual(['oauth.token.issued']);
    expect(events[0]!.envelope.data).toEqual({
      client: { id: app.id, clientId: app.client_id },
      user: { id: person.id },
      scope: 'openid email',
      grantType: 'authorization_code',
    });
    events = await emitted(
      async () =>
        (tokens = await ok(
          tokenRequest(server.url, {
            grant_type: 'refresh_token',
            refresh_token: tokens.refresh_token,
            client_id: app.client_id,
            client_secret: app.client_secret,
          }),
        )),
    );
    expect(kindsOf(events)).toEqual(['oauth.token.issued']);
    events = await emitted(() =>
      ok(
        client(server.url).post(
          '/oauth/revoke',
          new URLSearchParams({
            token: tokens.refresh_token,
            client_id: app.client_id,
            client_secret: app.client_secret,
          }).toString(),
          { 'content-type': 'application/x-www-form-urlencoded' },
        ),
      ),
    );
    expect(kindsOf(events)).toEqual(['oauth_client.token_revoked']);
    const consenting = await registerClient(person.api, {
      name: 'Asks first',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      organization_id: a.id,
    });
    const consentPage = await authorize(server.url, session, {
      ...params,
      client_id: consenting.client_id,
      scope: 'openid',
    });
    events = await emitted(() => decideConsent(server.url, session, consentPage));
    expect(kindsOf(events)).toEqual(['oauth.authorization.granted']);
    const machine = await registerClient(person.api, {
      name: 'Machine',
      redirect_uris: [],
      grant_types: ['client_credentials'],
      allowed_scopes: ['reports'],
      organization_id: a.id,
    });
    events = await emitted(() =>
      ok(
        tokenRequest(server.url, {
          grant_type: 'client_credentials',
          client_id: machine.client_id,
          client_secret: machine.client_secret,
        }),
      ),
    );
    expect(kindsOf(events)).toEqual(['oauth.token.issued']);
    expect(events[0]!.envelope.data).toMatchObject({ user: null, grantType: 'client_credentials' });
    events = await emitted(() => ok(person.api.delete(`/api/v1/oauth-clients/${app.id}`), 204));
    expect(kindsOf(events)).toEqual(['oauth.client.deleted', 'oauth_client.deleted']);

    // Subscriptions
    const product = await ok(
      admin.post('/v1/products', { name: 'Catalog product', slug: `catalog-${Date.now()}`, features: [] }),
      201,
    );
    let subscription: any;
    const end = new Date(clock.now().getTime() + 30 * DAY * 1000).toISOString();
    events = await emitted(
      async () =>
        (subscription = await ok(
          admin.post('/v1/subscriptions', {
            organization_id: a.id,
            product_id: product.id,
            total_seats: 5,
            price_per_seat: 9.5,
            billing_cycle: 'monthly',
            status: 'active',
            end_date: end,
          }),
          201,
        )),
    );
    expect(kindsOf(events)).toEqual(['subscription.created']);
    events = await emitted(() => ok(admin.patch(`/v1/subscriptions/${subscription.id}`, { total_seats: 6 })));
    expect(kindsOf(events)).toEqual(['subscription.updated']);
    const later = new Date(clock.now().getTime() + 60 * DAY * 1000).toISOString();
    events = await emitted(() => ok(admin.patch(`/v1/subscriptions/${subscription.id}`, { end_date: later })));
    expect(kindsOf(events)).toEqual(['subscription.renewed', 'subscription.updated']);
    events = await emitted(() => ok(admin.delete(`/v1/subscriptions/${subscription.id}`)));
    expect(kindsOf(events)).toEqual(['subscription.cancelled']);

    // Signing out, leaving, and deleting the account (with an organization it alone belongs to)
    events = await emitted(() => ok(person.api.post('/api/v1/auth/logout'), 204));
    expect(kindsOf(events)).toEqual(['session.revoked', 'session.revoked']);
    expect(fannedOut(events, 'session.revoked')).toEqual(both);
    person.api = (await signIn(server.url, email, password)).api;
    events = await emitted(() => ok(person.api.delete(`/v1/organizations/${b.id}/members/${person.id}`), 204));
    expect(kindsOf(events)).toEqual(['member.removed', 'organization.member.removed']);
    const own = await ok(person.api.post('/v1/organizations', { name: 'Catalog solo' }), 201);
    events = await emitted(() => ok(person.api.delete('/api/v1/users/me', { password }), 204));
    expect(kindsOf(events)).toEqual([
      'member.removed',
      'member.removed',
      'organization.deleted',
      'organization.member.removed',
      'organization.member.removed',
      'user.deleted',
      'user.deleted',
    ]);
    expect(
      events
        .filter((e) => e.kind === 'user.deleted')
        .map((e) => e.organizationId)
        .sort(),
    ).toEqual([a.id, own.id].sort());

    // Time: an invitation nobody answers
    await ok(admin.post(`/v1/organizations/${a.id}/invitations`, { email: `late-${Date.now()}@example.test` }), 201);
    clock.advance(8 * DAY);
    events = await emitted(() => runTaskNow(server.databaseUrl, 'expire_invitations'));
    expect(kindsOf(events)).toEqual(['member.invitation.expired']);
    // ... and the sessions of this test, which have all run out by then (seven days)
    events = await emitted(() => runTaskNow(server.databaseUrl, 'expire_sessions'));
    expect(events.length).toBeGreaterThan(0);
    expect([...new Set(kindsOf(events))]).toEqual(['session.expired']);
    clock.reset();
  });

  it('keeps every emitted event to the catalog: its kind, its example keys, its list case, and its organization', () => {
    expect(all.length).toBeGreaterThan(50);
    for (const e of all) {
      expect(isEventKind(e.kind), e.kind).toBe(true);
      const entry = EVENT_CATALOG[e.kind as EventKind];
      // The row is the exact text sent: the envelope in emitEvent's order, compact, with its organization.
      expect(Object.keys(e.envelope)).toEqual(['id', 'event', 'timestamp', 'organization', 'data']);
      expect(JSON.stringify(e.envelope)).toBe(e.body);
      // The envelope's id and time are the row's, whichever path (emitEvent or a hot statement's CTE) wrote it.
      expect(e.envelope.id).toBe(e.id);
      expect(e.envelope.timestamp).toBe(e.createdAt.toISOString());
      expect(e.envelope.event).toBe(e.kind);
      expect(e.envelope.organization).toEqual({ id: e.organizationId, name: expect.any(String) });
      sameKeys(e.envelope.data, entry.example, e.kind);
      const keys = keysOf(e.envelope.data);
      if (entry.lists.includes('A'))
        expect(
          keys.filter((k) => k.includes('_')),
          e.kind,
        ).toEqual([]);
      else
        expect(
          keys.filter((k) => /[A-Z]/.test(k)),
          e.kind,
        ).toEqual([]);
    }
    // Every kind an operation can cause was caused above.
    expect(EVENT_KINDS.filter((k) => !all.some((e) => e.kind === k))).toEqual([]);
  });

  it('gives the three shapes of the interface exactly', () => {
    const one = (kind: string) => all.find((e) => e.kind === kind && e.organizationId === a.id)!.envelope.data;
    expect(one('user.created')).toEqual({
      user: {
        id: person.id,
        email: invited,
        name: 'Ada',
        emailVerified: true,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      },
    });
    const accepted = one('member.invitation.accepted');
    expect(accepted).toEqual({
      invitation: { id: expect.any(String), email: invited, role: 'member', invitedBy: expect.any(String) },
      user: { id: person.id, email: invited, name: 'Ada' },
      organization: { id: a.id, name: 'Catalog A2' },
    });
    const added = all.find((e) => e.kind === 'organization.member.added' && e.envelope.data.member_id === person.id)!
      .envelope.data;
    expect(added).toEqual({
      organization_id: a.id,
      member_id: person.id,
      user: { id: person.id, email: invited, name: 'Ada' },
      role: 'member',
    });
  });

  it('lists the catalog at GET /api/v1/event-types with kind, group, lists, description and example', async () => {
    const reply = await ok(admin.get('/api/v1/event-types'));
    expect(reply.event_types.map((t: any) => t.kind)).toEqual(EVENT_KINDS);
    for (const t of reply.event_types) {
      const entry = EVENT_CATALOG[t.kind as EventKind];
      expect(t).toEqual({
        kind: t.kind,
        group: entry.group,
        lists: [...entry.lists],
        description: entry.description,
        example: entry.example,
      });
    }
  });
});

describe('an event written by the OAuth hot path (one SQL statement)', () => {
  it('reaches a webhook subscribed to oauth.token.issued after a code exchange, as the same envelope text emitEvent writes', async () => {
    // A name that JSON must escape: the SQL-built text has to escape it as JSON.stringify does.
    const org = await ok(admin.post('/v1/organizations', { name: 'Hot "path" \\ é ✓' }), 201);
    const hook = await ok(
      admin.post('/api/v1/webhooks', {
        url: receiver.url('receiver.test', '/issued'),
        events: ['oauth.token.issued'],
        organizationId: org.id,
      }),
      201,
    );
    const app = await registerClient(admin, {
      name: 'Hot path app',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      consent_required: false,
      organization_id: org.id,
    });
    const session = (await signIn(server.url, ADMIN.email, ADMIN.password)).login.token as string;
    const code = codeFrom(
      await authorize(server.url, session, {
        client_id: app.client_id,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: 'openid',
        nonce: 'n',
      }),
    );
    await ok(exchangeCode(server.url, app, code, REDIRECT));
    const [request] = await waitFor(() => {
      const got = receiver.received.filter((r) => r.path === '/issued');
      return got.length ? got : undefined;
    });
    const sent = JSON.parse(request!.body);
    expect(request!.headers['x-service-event']).toBe('oauth.token.issued');
    expect(sent).toEqual({
      id: expect.any(String),
      event: 'oauth.token.issued',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]{12}Z$/),
      organization: { id: org.id, name: org.name },
      data: {
        client: { id: app.id, clientId: app.client_id },
        user: { id: expect.any(String) },
        scope: 'openid',
        grantType: 'authorization_code',
      },
    });
    // Byte for byte what JSON.stringify makes of it: key order {id, event, timestamp, organization, data}, no spaces.
    expect(request!.body).toBe(JSON.stringify(sent));
    const row = await server.base.db.event.findUniqueOrThrow({ where: { id: sent.id } });
    expect(row.body).toBe(request!.body);
    expect(request!.headers['x-service-delivery']).toBe(
      (await server.base.db.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.id } })).id,
    );
  });

  it('stores a hot path event only when an active webhook of its organization wants the kind', async () => {
    const org = await ok(admin.post('/v1/organizations', { name: 'Fan-out org' }), 201);
    const issued = await ok(
      admin.post('/api/v1/webhooks', {
        url: receiver.url('receiver.test', '/fan-issued'),
        events: ['oauth.token.issued'],
        organizationId: org.id,
      }),
      201,
    );
    const granted = await ok(
      admin.post('/api/v1/webhooks', {
        url: receiver.url('receiver.test', '/fan-granted'),
        events: ['oauth.authorization.granted'],
        organizationId: org.id,
      }),
      201,
    );
    await ok(admin.patch(`/api/v1/webhooks/${granted.id}`, { isActive: false }));
    const app = await registerClient(admin, {
      name: 'Fan-out app',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      consent_required: false,
      organization_id: org.id,
    });
    const session = (await signIn(server.url, ADMIN.email, ADMIN.password)).login.token as string;
    const flow = (of: ClientCredentials) => async () => {
      const code = codeFrom(
        await authorize(server.url, session, {
          client_id: of.client_id,
          redirect_uri: REDIRECT,
          response_type: 'code',
          scope: 'openid',
          nonce: 'n',
        }),
      );
      expect((await ok(exchangeCode(server.url, of, code, REDIRECT))).id_token).toEqual(expect.any(String));
    };
    // The event and its deliveries are written by the same statement as the code or tokens: there with the reply.
    const rowsOf = async (events: Emitted[]) =>
      Promise.all(
        events.map(async (e) => {
          const row = await server.base.db.event.findUniqueOrThrow({
            where: { id: e.envelope.id },
            include: { deliveries: true },
          });
          return { kind: row.kind, deliveredTo: row.deliveries.map((d) => d.webhookId) };
        }),
      );

    // The webhook for authorizations is inactive: that event is not stored; the exchange's is, and delivered.
    expect(await rowsOf(await emitted(flow(app)))).toEqual([{ kind: 'oauth.token.issued', deliveredTo: [issued.id] }]);
    // Active again: the next authorization reaches it.
    await ok(admin.patch(`/api/v1/webhooks/${granted.id}`, { isActive: true }));
    expect(await rowsOf(await emitted(flow(app)))).toEqual([
      { kind: 'oauth.authorization.granted', deliveredTo: [granted.id] },
      { kind: 'oauth.token.issued', deliveredTo: [issued.id] },
    ]);
    // Another organization's webhooks count for nothing: an organization without one stores neither event, while
    // the same statements write the code, the tokens and the authorization's audit entry (a token's is opt-in:
    // AUDIT_TOKEN_ISSUANCE, test/oauth/audit.test.ts).
    const quiet = await ok(admin.post('/v1/organizations', { name: 'No webhooks org' }), 201);
    const quietApp = await registerClient(admin, {
      name: 'Quiet app',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid'],
      consent_required: false,
      organization_id: quiet.id,
    });
    expect(await emitted(flow(quietApp))).toEqual([]);
    const audited = await server.base.db.auditLog.findMany({
      where: { organizationId: quiet.id, targetId: quietApp.id, action: { startsWith: 'oauth.' } },
      select: { action: true },
    });
    expect(audited.map((r) => r.action).sort()).toEqual(['oauth.authorize']);
    await waitFor(() => receiver.received.filter((r) => r.path === '/fan-granted').length === 1 || undefined);
  });
});
