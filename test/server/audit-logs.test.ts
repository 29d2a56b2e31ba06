// GET /api/v1/audit-logs and the auditLogs query: who sees which entries, the filters, cursor paging newest first,
// failed sign-ins where admins can see them, and no secrets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import { TIMESTAMP_OR_DAY_RULE } from '../../schema/lib/input.ts';

let server: TestServer;
let platform: Client;
let operatorId: string;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  operatorId = (await platform.get('/api/v1/orgs')).body[0].id;
  a = await createTenant(server.url, platform, 'Tenant A');
  b = await createTenant(server.url, platform, 'Tenant B');
});
afterAll(() => server?.stop());

/** GET /api/v1/audit-logs with these filters, checked against openapi.json. */
async function auditLogs(as: Client, query: Record<string, string> = {}) {
  const path = `/api/v1/audit-logs?${new URLSearchParams(query)}`;
  const reply = await as.get(path);
  expectMatchesOpenApi('GET', path, reply);
  return reply;
}

const wrongPassword = (email: string) =>
  client(server.url).post(
    '/api/v1/auth/login',
    { email, password: 'definitely not it' },
    { 'user-agent': 'audit-test/2.0' },
  );

describe('failed sign-ins in the audit log', () => {
  it("of an account no organization manages are the platform's: not seen by the organizations the person joined", async () => {
    // given a person in both tenants, neither of which manages the account (docs/architecture.md#managed-accounts:
    // anyone can make an organization and invite them)
    const person = await addPerson(server.url, a.owner.api, a.id, 'member', 'both');
    const invite = await b.owner.api.post(`/v1/organizations/${b.id}/invitations`, { email: person.email });
    expect((await person.api.post('/api/v1/invitations/accept', { token: invite.body.token })).status).toBe(200);

    // when someone tries a wrong password for them
    expect((await wrongPassword(person.email)).status).toBe(401);

    // then platform admins see it, with the e-mail, address and user agent
    const seen = await auditLogs(platform, { action: 'auth.login', outcome: 'failure', target_id: person.id });
    expect(seen.body.audit_logs).toEqual([
      expect.objectContaining({
        organization_id: null,
        action: 'auth.login',
        outcome: 'failure',
        target_type: 'user',
        target_id: person.id,
        actor: { type: 'user', id: person.id, name: 'both', email: person.email },
        ip: expect.stringMatching(/127\.0\.0\.1/),
        user_agent: 'audit-test/2.0',
        details: { email: person.email, reason: 'wrong_password' },
      }),
    ]);
    // and neither tenant's admin does
    for (const tenant of [a, b]) {
      const reply = await auditLogs(tenant.admin.api, {
        action: 'auth.login',
        outcome: 'failure',
        target_id: person.id,
      });
      expect(reply.status).toBe(200);
      expect(reply.body.audit_logs).toEqual([]);
    }
  });

  it('on an unknown e-mail are a platform event: platform admins see it, tenants do not', async () => {
    const email = 'no-such-person@example.test';
    expect((await wrongPassword(email)).status).toBe(401);

    const seen = await auditLogs(platform, { actor: email });
    expect(seen.body.audit_logs).toEqual([
      expect.objectContaining({
        organization_id: null,
        action: 'auth.login',
        outcome: 'failure',
        actor: { type: 'anonymous', id: null, name: null, email: null },
        details: { email, reason: 'unknown_email' },
        user_agent: 'audit-test/2.0',
      }),
    ]);
    expect((await auditLogs(a.admin.api, { actor: email })).body.audit_logs).toEqual([]);
    // The platform's own trail (the operator organization) does not hold it: it belongs to no organization.
    expect((await auditLogs(platform, { actor: email, organization_id: operatorId })).body.audit_logs).toEqual([]);
  });
});

describe('who reads what', () => {
  it('platform admins read every organization; a tenant admin only theirs; members and strangers nothing', async () => {
    await a.admin.api.patch(`/v1/organizations/${a.id}`, { name: 'Tenant A' });
    await b.admin.api.patch(`/v1/organizations/${b.id}`, { name: 'Tenant B' });

    const all = await auditLogs(platform, { action: 'organization.update', limit: '100' });
    expect(new Set(all.body.audit_logs.map((e: { organization_id: string }) => e.organization_id))).toEqual(
      new Set([a.id, b.id]),
    );

    const theirs = await auditLogs(a.admin.api, { limit: '100' });
    expect(theirs.status).toBe(200);
    expect(theirs.body.audit_logs.length).toBeGreaterThan(0);
    expect(theirs.body.audit_logs.every((e: { organization_id: string }) => e.organization_id === a.id)).toBe(true);

    // Another tenant's id does not exist for them; a member's role is too low.
    expect((await auditLogs(a.admin.api, { organization_id: b.id })).status).toBe(404);
    expect((await auditLogs(a.member.api)).status).toBe(403);
    expect((await auditLogs(client(server.url))).status).toBe(401);
    // An admin's API key reads its organization's trail too.
    const key = await a.admin.api.post('/api/v1/api-keys', { name: 'auditor', role: 'admin' });
    const byKey = await auditLogs(client(server.url, { apiKey: { key: key.body.key, secret: key.body.secret } }), {
      limit: '5',
    });
    expect(byKey.status).toBe(200);
    expect(byKey.body.audit_logs.every((e: { organization_id: string }) => e.organization_id === a.id)).toBe(true);
  });
});

describe('filters and paging', () => {
  it('pages newest first with next_cursor until the last page, and refuses a limit over 100', async () => {
    for (let i = 0; i < 5; i++)
      expect((await b.admin.api.patch(`/v1/organizations/${b.id}`, { name: `Tenant B ${i}` })).status).toBe(200);
    const everything = await auditLogs(b.admin.api, { action: 'organization.update', limit: '100' });
    const ids: string[] = everything.body.audit_logs.map((e: { id: string }) => e.id);
    expect(ids.length).toBeGreaterThanOrEqual(6);
    expect(ids).toEqual([...ids].sort().reverse());
    const times = everything.body.audit_logs.map((e: { created_at: string }) => Date.parse(e.created_at));
    expect(times).toEqual([...times].sort((x, y) => y - x));

    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const reply = await auditLogs(b.admin.api, {
        action: 'organization.update',
        limit: '2',
        ...(cursor ? { cursor } : {}),
      });
      expect(reply.body.audit_logs.length).toBeLessThanOrEqual(2);
      walked.push(...reply.body.audit_logs.map((e: { id: string }) => e.id));
      cursor = reply.body.next_cursor;
    } while (cursor);
    expect(walked).toEqual(ids);

    expect((await auditLogs(b.admin.api, { limit: '101' })).status).toBe(400);
    expect((await auditLogs(b.admin.api, { limit: 'many' })).status).toBe(400);
  });

  it('filters by actor (id or e-mail), action (exact or prefix), target, outcome and time', async () => {
    const renamed = await a.owner.api.patch(`/v1/organizations/${a.id}`, { name: 'Tenant A' });
    expect(renamed.status).toBe(200);
    const byOwner = await auditLogs(a.admin.api, { actor: a.owner.id, action: 'organization.update' });
    expect(byOwner.body.audit_logs.length).toBeGreaterThan(0);
    expect(
      byOwner.body.audit_logs.every((e: any) => e.actor.id === a.owner.id && e.actor.email === a.owner.email),
    ).toBe(true);
    const byEmail = await auditLogs(a.admin.api, { actor: a.owner.email.toUpperCase(), action: 'organization.update' });
    expect(byEmail.body.audit_logs.map((e: { id: string }) => e.id)).toEqual(
      byOwner.body.audit_logs.map((e: { id: string }) => e.id),
    );

    const prefixed = await auditLogs(platform, { action: 'auth.*', limit: '100' });
    expect(prefixed.body.audit_logs.length).toBeGreaterThan(0);
    expect(prefixed.body.audit_logs.every((e: { action: string }) => e.action.startsWith('auth.'))).toBe(true);

    const target = await auditLogs(a.admin.api, { target_type: 'organization', target_id: a.id });
    expect(target.body.audit_logs.length).toBeGreaterThan(0);
    expect(target.body.audit_logs.every((e: any) => e.target_type === 'organization' && e.target_id === a.id)).toBe(
      true,
    );

    const successes = await auditLogs(platform, { outcome: 'success', limit: '100' });
    expect(successes.body.audit_logs.every((e: { outcome: string }) => e.outcome === 'success')).toBe(true);

    const newest = byOwner.body.audit_logs[0];
    const at = newest.created_at;
    const from = await auditLogs(a.admin.api, { actor: a.owner.id, action: 'organization.update', from: at });
    expect(from.body.audit_logs.map((e: { id: string }) => e.id)).toContain(newest.id);
    expect(
      (await auditLogs(a.admin.api, { actor: a.owner.id, action: 'organization.update', to: at })).body.audit_logs.map(
        (e: { id: string }) => e.id,
      ),
    ).not.toContain(newest.id);
    // A date as `to` takes in that whole day.
    expect(
      (
        await auditLogs(a.admin.api, { actor: a.owner.id, action: 'organization.update', to: at.slice(0, 10) })
      ).body.audit_logs.map((e: { id: string }) => e.id),
    ).toContain(newest.id);
    expect((await auditLogs(a.admin.api, { from: '2999-01-01' })).body.audit_logs).toEqual([]);
  });

  it('refuses malformed filters with 400 and says which', async () => {
    const bad = await auditLogs(a.admin.api, { outcome: 'maybe', from: 'yesterday' });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual(
      expect.arrayContaining([
        { path: 'outcome', message: 'must be success or failure' },
        { path: 'from', message: TIMESTAMP_OR_DAY_RULE },
      ]),
    );
    expect((await auditLogs(a.admin.api, { to: '2026-02-31' })).status).toBe(400);
    expect((await auditLogs(a.admin.api, { cursor: 'x'.repeat(500) })).status).toBe(400);
    // An inverted range would silently match nothing: it is refused, and the same day at both ends is fine.
    const inverted = await auditLogs(a.admin.api, { from: '2026-03-02', to: '2026-03-01T23:00:00Z' });
    expect(inverted.status).toBe(400);
    expect(inverted.body.details).toEqual([{ path: 'to', message: 'must not be before from' }]);
    expect((await auditLogs(a.admin.api, { from: '2026-03-01', to: '2026-03-01' })).status).toBe(200);
  });

  it('answers the GraphQL query with the same filters and pages', async () => {
    const query = `query($actor: String, $action: String, $outcome: String, $limit: Int, $cursor: String) {
      auditLogs(actor: $actor, action: $action, outcome: $outcome, limit: $limit, cursor: $cursor) {
        items { id organizationId action outcome actor { type id name email } details } nextCursor } }`;
    const rest = await auditLogs(platform, { action: 'auth.login', outcome: 'failure', limit: '1' });
    const gql = await platform.post('/graphql', {
      query,
      variables: { action: 'auth.login', outcome: 'failure', limit: 1 },
    });
    expect(gql.status).toBe(200);
    expect(gql.body.data.auditLogs.items.map((e: { id: string }) => e.id)).toEqual(
      rest.body.audit_logs.map((e: { id: string }) => e.id),
    );
    expect(gql.body.data.auditLogs.nextCursor).toBe(rest.body.next_cursor);
    const next = await platform.post('/graphql', {
      query,
      variables: { action: 'auth.login', outcome: 'failure', limit: 1, cursor: gql.body.data.auditLogs.nextCursor },
    });
    expect(next.body.data.auditLogs.items[0].id < gql.body.data.auditLogs.items[0].id).toBe(true);
    // A member asking is refused at the top level.
    const refused = await a.member.api.post('/graphql', { query, variables: {} });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('forbidden');
  });
});

// S8: `from` and `to` are read by the one rule for timestamps: an RFC 3339 date-time with its zone, or a date
// (the interface's: that whole day, UTC). Nothing impossible is rolled over, nothing zone-less is guessed.
describe('the time filters', () => {
  const REFUSED: [label: string, value: string][] = [
    ['30 February', '2027-02-30T00:00:00Z'],
    ['an HTTP date', 'Tue, 01 Jan 2030 00:00:00 GMT'],
    ['a bare year', '2030'],
    ['month 13', '2027-13-01'],
    ['29 February of a common year, as a date', '2027-02-29'],
    ['29 February of a common year, as a date-time', '2027-02-29T00:00:00Z'],
    ['hour 24', '2027-06-30T24:00:00Z'],
    ['second 61', '2027-06-30T12:00:61Z'],
    ['no zone', '2027-06-30T00:00:00'],
    ['a space instead of T', '2027-06-30 00:00:00Z'],
    ['no seconds', '2027-06-30T00:00Z'],
    ['an offset without a colon', '2027-06-30T00:00:00+0200'],
    ['trailing garbage', '2027-06-30T00:00:00Zjunk'],
    ['a NUL', '2027-06-30\u0000'],
    // RFC 3339 spells year 0000; PostgreSQL has no year 0, so no such instant can be compared with an entry.
    ['year 0000, as a date', '0000-01-01'],
    ['year 0000, as a date-time', '0000-06-30T00:00:00Z'],
    ['an offset that carries 9999 into year 10000', '9999-12-31T23:59:59-01:00'],
  ];

  it.each(REFUSED)(
    'refuses %s as from or to with 400 naming the filter, on REST and GraphQL',
    async (_label, value) => {
      for (const name of ['from', 'to'] as const) {
        const reply = await auditLogs(a.admin.api, { [name]: value });
        expect(reply.status, JSON.stringify(reply.body)).toBe(400);
        expect(reply.body.error).toBe('invalid_request');
        // A NUL is refused at the door, for every query parameter alike (server/middleware/input-guard.ts).
        const problem = value.includes('\u0000')
          ? { path: `query.${name}`, message: expect.stringContaining('NUL') }
          : { path: name, message: TIMESTAMP_OR_DAY_RULE };
        expect(reply.body.details).toEqual([problem]);
        const gql = await a.admin.api.post('/graphql', {
          query: `query($v: String) { auditLogs(${name}: $v) { items { id } } }`,
          variables: { v: value },
        });
        expect(gql.body.errors?.[0]?.extensions?.code, JSON.stringify(gql.body)).toBe('invalid_request');
        expect(gql.body.data ?? null).toBeNull();
      }
    },
  );

  it('reads Z, an offset, a fraction and a leap day as the instants they name', async () => {
    // given an entry, and its instant written with a +02:00 offset and lower-case t
    expect((await a.owner.api.patch(`/v1/organizations/${a.id}`, { name: 'Tenant A' })).status).toBe(200);
    const filter = { actor: a.owner.id, action: 'organization.update' };
    const newest = (await auditLogs(a.admin.api, filter)).body.audit_logs[0];
    const at = Date.parse(newest.created_at);
    const plusTwo = new Date(at + 2 * 3600_000).toISOString().replace('T', 't').replace('Z', '+02:00');
    const ids = async (query: Record<string, string>) => {
      const reply = await auditLogs(a.admin.api, { ...filter, ...query });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      return reply.body.audit_logs.map((e: { id: string }) => e.id);
    };
    // then from takes it in and to leaves it out, whichever way the instant is written
    expect(await ids({ from: plusTwo })).toContain(newest.id);
    expect(await ids({ to: plusTwo })).not.toContain(newest.id);
    expect(await ids({ from: new Date(at + 1).toISOString() })).not.toContain(newest.id);
    expect(await ids({ to: new Date(at + 1).toISOString().replace('Z', '000z') })).toContain(newest.id);
    expect(await ids({ from: '2028-02-29', to: '2028-02-29T23:59:59.999-05:00' })).toEqual([]);
    expect(await ids({ to: '2028-02-29' })).toContain(newest.id);
  });

  it('takes the first and the last day it can store as the ends of time', async () => {
    const filter = { action: 'organization.update' };
    const all = (await auditLogs(a.admin.api, filter)).body.audit_logs;
    expect(all.length).toBeGreaterThan(0);
    const ranges: Record<string, string>[] = [
      { from: '0001-01-01' },
      { to: '9999-12-31' },
      { from: '0001-01-01T00:00:00Z', to: '9999-12-31T23:59:59Z' },
    ];
    for (const range of ranges) {
      const reply = await auditLogs(a.admin.api, { ...filter, ...range });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(reply.body.audit_logs).toEqual(all);
    }
    expect((await auditLogs(a.admin.api, { ...filter, to: '0001-01-01' })).body.audit_logs).toEqual([]);
  });
});

describe('secrets', () => {
  it('never appear in an entry', async () => {
    const key = await a.admin.api.post('/api/v1/api-keys', { name: 'secretive' });
    const app = await a.admin.api.post('/api/v1/oauth-clients', {
      name: 'Secretive',
      redirect_uris: ['https://secretive.example.test/cb'],
      allowed_scopes: ['openid'],
    });
    const rotated = await a.admin.api.post(`/api/v1/oauth-clients/${app.body.id}/rotate-secret`);
    const invite = await a.admin.api.post(`/v1/organizations/${a.id}/invitations`, {
      email: 'secret-joiner@example.test',
    });
    const joined = await client(server.url).post('/api/v1/invitations/accept', {
      token: invite.body.token,
      name: 'Joiner',
      password: PASSWORD,
    });
    expect([key.status, app.status, rotated.status, invite.status, joined.status]).toEqual([201, 201, 200, 201, 200]);

    const text = JSON.stringify((await auditLogs(a.admin.api, { limit: '100' })).body);
    for (const secret of [
      key.body.secret,
      key.body.key,
      app.body.client_secret,
      rotated.body.client_secret,
      invite.body.token,
      joined.body.token,
      PASSWORD,
    ]) {
      expect(text).not.toContain(secret);
    }
  });
});
