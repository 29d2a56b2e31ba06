// Subscriptions over /v1/subscriptions and /api/v1/subscriptions: platform admins create and change them, an
// organization's members read their own, another tenant's answer 404; status follows the interface's table row by
// row; price_per_seat is exact; every change leaves its events and an audit entry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';

let server: TestServer;
let platform: Client;
let tenant: Tenant;
let other: Tenant;
let productId: string;

const STATUSES = ['active', 'trial', 'cancelled', 'expired'] as const;
const PREFIXES = ['/v1', '/api/v1'] as const;

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  [tenant, other] = await Promise.all([createTenant(server.url, platform), createTenant(server.url, platform)]);
  const product = await platform.post('/v1/products', { name: 'Analytics', slug: 'analytics', features: ['export'] });
  productId = product.body.id;
});
afterAll(() => server?.stop());

const body = (extra: Record<string, unknown> = {}) => ({
  organization_id: tenant.id, product_id: productId, total_seats: 10, price_per_seat: 19.99, billing_cycle: 'monthly', status: 'active', ...extra,
});

async function create(extra: Record<string, unknown> = {}, prefix: string = '/v1') {
  const reply = await platform.post(`${prefix}/subscriptions`, body(extra));
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

const eventsOf = async (id: string) =>
  (await server.base.db.event.findMany({ where: { kind: { startsWith: 'subscription.' } }, orderBy: { id: 'asc' } }))
    .filter((e) => JSON.parse(e.body).data.subscription.id === id);

describe('POST /subscriptions', () => {
  it.each(PREFIXES)('creates a subscription with the snake_case fields under %s', async (prefix) => {
    const reply = await platform.post(`${prefix}/subscriptions`, body({ end_date: '2027-06-30T00:00:00.000Z' }));
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expectMatchesOpenApi('POST', `${prefix}/subscriptions`, reply);
    expect(reply.body).toEqual({
      id: expect.any(String), organization_id: tenant.id, product_id: productId, total_seats: 10, assigned_seats: 0,
      price_per_seat: 19.99, billing_cycle: 'monthly', status: 'active', end_date: '2027-06-30T00:00:00.000Z',
      created_at: expect.any(String), updated_at: expect.any(String),
    });
  });

  it('keeps the price exact: numeric in the database, the same number on the wire', async () => {
    const s = await create({ price_per_seat: 0.1 });
    const [row] = await server.base.db.$queryRaw<{ price: string }[]>`select price_per_seat::text as price from subscriptions where id = ${s.id}`;
    expect(row!.price).toBe('0.10');
    const patched = await platform.patch(`/v1/subscriptions/${s.id}`, { price_per_seat: 19.99 });
    const [after] = await server.base.db.$queryRaw<{ price: string }[]>`select price_per_seat::text as price from subscriptions where id = ${s.id}`;
    expect(after!.price).toBe('19.99');
    const text = await (await fetch(`${server.url}/v1/subscriptions/${s.id}`, { headers: { authorization: `Bearer ${tenant.member.token}` } })).text();
    expect(text).toContain('"price_per_seat":19.99');
    expect(patched.body.price_per_seat).toBe(19.99);
    expect((await create({ price_per_seat: 1234567890.12 })).price_per_seat).toBe(1234567890.12);
  });

  it('starts in the status given (row 1 of the table), active when none is given', async () => {
    for (const status of STATUSES) expect((await create({ status })).status).toBe(status);
    const { status: _none, ...withoutStatus } = body();
    const reply = await platform.post('/v1/subscriptions', withoutStatus);
    expect(reply.body.status).toBe('active');
  });

  it('emits subscription.created with the snake_case data in the same transaction, and records an audit entry', async () => {
    const s = await create();
    const events = await eventsOf(s.id);
    expect(events.map((e) => e.kind)).toEqual(['subscription.created']);
    expect(events[0]!.organizationId).toBe(tenant.id);
    expect(JSON.parse(events[0]!.body).organization).toEqual({ id: tenant.id, name: tenant.name });
    expect(JSON.parse(events[0]!.body).data.subscription).toMatchObject({ id: s.id, organization_id: tenant.id, product_id: productId, price_per_seat: 19.99, total_seats: 10, status: 'active' });
    expect(await server.base.db.auditLog.count({ where: { action: 'subscription.create', targetId: s.id, organizationId: tenant.id } })).toBe(1);
  });

  it.each([
    ['an unknown status', { status: 'paused' }],
    ['an unknown billing cycle', { billing_cycle: 'weekly' }],
    ['negative seats', { total_seats: -1 }],
    ['fractional seats', { total_seats: 2.5 }],
    ['seats as text', { total_seats: '10' }],
    ['a negative price', { price_per_seat: -1 }],
    ['three decimals', { price_per_seat: 19.999 }],
    ['a huge price', { price_per_seat: 1e12 }],
    ['a price as words', { price_per_seat: 'ten' }],
    ['a bad end date', { end_date: 'tomorrow' }],
    ['a missing product', { product_id: undefined }],
    ['a missing organization', { organization_id: undefined }],
    ['an unknown field', { seats: 3 }],
  ])('answers 400 for %s', async (_label, change) => {
    const reply = await platform.post('/v1/subscriptions', body(change));
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    expect(reply.body.error).toBe('invalid_request');
    expectMatchesOpenApi('POST', '/v1/subscriptions', reply);
  });

  it('answers 404 for an unknown organization or product, 403 to tenant owners, 401 without credentials', async () => {
    expect((await platform.post('/v1/subscriptions', body({ organization_id: 'no-such-org' }))).status).toBe(404);
    expect((await platform.post('/v1/subscriptions', body({ product_id: 'no-such-product' }))).status).toBe(404);
    const own = await tenant.owner.api.post('/api/v1/subscriptions', body());
    expect(own.status).toBe(403);
    expectMatchesOpenApi('POST', '/api/v1/subscriptions', own);
    expect((await other.owner.api.post('/v1/subscriptions', body())).status).toBe(404);
    expect((await client(server.url).post('/v1/subscriptions', body())).status).toBe(401);
  });
});

describe('reading subscriptions', () => {
  it("lets an organization's admins and members read their own; another tenant's id answers 404", async () => {
    const s = await create();
    for (const person of [tenant.owner, tenant.admin, tenant.member]) {
      for (const prefix of PREFIXES) {
        const reply = await person.api.get(`${prefix}/subscriptions/${s.id}`);
        expect(reply.status).toBe(200);
        expectMatchesOpenApi('GET', `${prefix}/subscriptions/${s.id}`, reply);
        expect(reply.body.id).toBe(s.id);
      }
    }
    for (const prefix of PREFIXES) {
      const hidden = await other.admin.api.get(`${prefix}/subscriptions/${s.id}`);
      expect(hidden.status).toBe(404);
      expectMatchesOpenApi('GET', `${prefix}/subscriptions/${s.id}`, hidden);
      expect((await other.owner.api.patch(`${prefix}/subscriptions/${s.id}`, { total_seats: 1 })).status).toBe(404);
      expect((await other.owner.api.delete(`${prefix}/subscriptions/${s.id}`)).status).toBe(404);
    }
    expect((await platform.get(`/v1/subscriptions/${s.id}`)).status).toBe(200);
    expect((await platform.get('/v1/subscriptions/no-such-id')).status).toBe(404);
  });

  it('lists by organization and status; members see only their organizations; platform admins see all', async () => {
    const mine = await create({ status: 'trial' });
    const theirs = await create({ organization_id: other.id, status: 'trial' });
    for (const prefix of PREFIXES) {
      const listed = await tenant.member.api.get(`${prefix}/subscriptions?limit=100`);
      expect(listed.status).toBe(200);
      expectMatchesOpenApi('GET', `${prefix}/subscriptions?limit=100`, listed);
      const ids = listed.body.subscriptions.map((s: { id: string }) => s.id);
      expect(ids).toContain(mine.id);
      expect(ids).not.toContain(theirs.id);
      expect(listed.body.subscriptions.every((s: { organization_id: string }) => s.organization_id === tenant.id)).toBe(true);
    }
    const trials = await platform.get(`/api/v1/subscriptions?status=trial&organization_id=${other.id}`);
    expect(trials.body.subscriptions.map((s: { id: string }) => s.id)).toEqual([theirs.id]);
    const everything = await platform.get('/v1/subscriptions?status=trial&limit=100');
    expect(everything.body.subscriptions.map((s: { id: string }) => s.id)).toEqual(expect.arrayContaining([mine.id, theirs.id]));
    expect(everything.body.subscriptions.every((s: { status: string }) => s.status === 'trial')).toBe(true);
    const byProduct = await platform.get(`/v1/subscriptions?product_id=${productId}&limit=1`);
    expect(byProduct.body.subscriptions).toHaveLength(1);
    expect(byProduct.body.next_cursor).toEqual(expect.any(String));

    const foreign = await tenant.member.api.get(`/v1/subscriptions?organization_id=${other.id}`);
    expect(foreign.status).toBe(404);
    expectMatchesOpenApi('GET', `/v1/subscriptions?organization_id=${other.id}`, foreign);
    const badStatus = await tenant.member.api.get('/api/v1/subscriptions?status=paused');
    expect(badStatus.status).toBe(400);
    expectMatchesOpenApi('GET', '/api/v1/subscriptions?status=paused', badStatus);
    expect((await tenant.member.api.get('/v1/subscriptions?limit=abc')).status).toBe(400);
    expect((await client(server.url).get('/v1/subscriptions')).status).toBe(401);
  });

  it("lets an organization's API key read its organization's subscriptions", async () => {
    const s = await create();
    const created = await tenant.admin.api.post('/api/v1/api-keys', { name: 'reader', role: 'member' });
    const key = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    expect((await key.get(`/api/v1/subscriptions/${s.id}`)).status).toBe(200);
    const listed = await key.get('/api/v1/subscriptions?limit=100');
    expect(listed.body.subscriptions.map((x: { id: string }) => x.id)).toContain(s.id);
    expect((await key.patch(`/api/v1/subscriptions/${s.id}`, { total_seats: 2 })).status).toBe(403);
  });
});

describe('the status table, row by row', () => {
  // Row 2: PATCH with status set moves from any current state to any allowed value, other fields updated with it.
  for (const from of STATUSES) {
    for (const to of STATUSES) {
      it(`PATCH moves ${from} to ${to}`, async () => {
        const s = await create({ status: from });
        const reply = await platform.patch(`/v1/subscriptions/${s.id}`, { status: to, total_seats: 12, price_per_seat: 9.5, end_date: '2028-01-01T00:00:00.000Z' });
        expect(reply.status, JSON.stringify(reply.body)).toBe(200);
        expectMatchesOpenApi('PATCH', `/v1/subscriptions/${s.id}`, reply);
        expect(reply.body).toMatchObject({ status: to, total_seats: 12, price_per_seat: 9.5, end_date: '2028-01-01T00:00:00.000Z' });
        expect((await platform.get(`/v1/subscriptions/${s.id}`)).body.status).toBe(to);
      });
    }
  }

  // Row 3: PATCH with status cancelled cancels, from any state; the record stays.
  it.each(STATUSES)('PATCH {"status":"cancelled"} cancels a %s subscription and keeps the record', async (from) => {
    const s = await create({ status: from });
    const reply = await platform.patch(`/api/v1/subscriptions/${s.id}`, { status: 'cancelled' });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: s.id, status: 'cancelled', total_seats: 10 });
    expect((await tenant.member.api.get(`/api/v1/subscriptions/${s.id}`)).body.status).toBe('cancelled');
    const kinds = (await eventsOf(s.id)).map((e) => e.kind);
    expect(kinds).toEqual(from === 'cancelled' ? ['subscription.created'] : ['subscription.created', 'subscription.cancelled']);
  });

  // Row 4: DELETE cancels, from any state; the record stays.
  it.each(STATUSES)('DELETE cancels a %s subscription and keeps the record', async (from) => {
    const s = await create({ status: from });
    for (const prefix of PREFIXES) {
      const reply = await platform.delete(`${prefix}/subscriptions/${s.id}`);
      expect(reply.status).toBe(200);
      expectMatchesOpenApi('DELETE', `${prefix}/subscriptions/${s.id}`, reply);
      expect(reply.body).toMatchObject({ id: s.id, status: 'cancelled' });
    }
    const kept = await platform.get(`/v1/subscriptions/${s.id}`);
    expect(kept.status).toBe(200);
    expect(kept.body.status).toBe('cancelled');
    const kinds = (await eventsOf(s.id)).map((e) => e.kind);
    // The second DELETE finds it cancelled already: no second event.
    expect(kinds).toEqual(from === 'cancelled' ? ['subscription.created'] : ['subscription.created', 'subscription.cancelled']);
    expect(await server.base.db.auditLog.count({ where: { action: 'subscription.cancel', targetId: s.id } })).toBe(from === 'cancelled' ? 0 : 1);
  });

  it('refuses changes and cancellation from anyone but platform admins', async () => {
    const s = await create();
    for (const person of [tenant.owner, tenant.admin, tenant.member]) {
      const patch = await person.api.patch(`/v1/subscriptions/${s.id}`, { status: 'cancelled' });
      expect(patch.status).toBe(403);
      expectMatchesOpenApi('PATCH', `/v1/subscriptions/${s.id}`, patch);
      const del = await person.api.delete(`/api/v1/subscriptions/${s.id}`);
      expect(del.status).toBe(403);
      expectMatchesOpenApi('DELETE', `/api/v1/subscriptions/${s.id}`, del);
    }
    expect((await platform.get(`/v1/subscriptions/${s.id}`)).body.status).toBe('active');
  });
});

describe('PATCH /subscriptions/{id}', () => {
  it('emits subscription.updated for a change, and subscription.renewed when an active end_date moves later', async () => {
    const s = await create({ end_date: '2027-01-01T00:00:00.000Z' });
    await platform.patch(`/v1/subscriptions/${s.id}`, { total_seats: 20 });
    await platform.patch(`/v1/subscriptions/${s.id}`, { end_date: '2028-01-01T00:00:00.000Z' });
    await platform.patch(`/v1/subscriptions/${s.id}`, { end_date: '2027-06-01T00:00:00.000Z' });
    await platform.patch(`/v1/subscriptions/${s.id}`, { total_seats: 20 });
    const events = await eventsOf(s.id);
    expect(events.map((e) => e.kind)).toEqual([
      'subscription.created',
      'subscription.updated',
      'subscription.updated', 'subscription.renewed',
      'subscription.updated',
    ]);
    expect(JSON.parse(events[3]!.body).data).toMatchObject({ changes: ['end_date'], previous_end_date: '2027-01-01T00:00:00.000Z', subscription: { end_date: '2028-01-01T00:00:00.000Z' } });
    expect(await server.base.db.auditLog.count({ where: { action: 'subscription.update', targetId: s.id } })).toBe(3);
  });

  it('does not renew a trial or cancelled subscription by moving its end date', async () => {
    const s = await create({ status: 'trial', end_date: '2027-01-01T00:00:00.000Z' });
    await platform.patch(`/v1/subscriptions/${s.id}`, { end_date: '2028-01-01T00:00:00.000Z' });
    expect((await eventsOf(s.id)).map((e) => e.kind)).toEqual(['subscription.created', 'subscription.updated']);
  });

  it('clears the end date with null', async () => {
    const s = await create({ end_date: '2027-01-01T00:00:00.000Z' });
    const reply = await platform.patch(`/api/v1/subscriptions/${s.id}`, { end_date: null });
    expect(reply.body.end_date).toBeNull();
  });

  it.each([
    ['an unknown status', { status: 'paused' }],
    ['negative seats', { total_seats: -5 }],
    ['a null price', { price_per_seat: null }],
    ['too many decimals', { price_per_seat: 1.234 }],
    ['a field that cannot change', { organization_id: 'elsewhere' }],
    ['a bad date', { end_date: '31/12/2027' }],
  ])('answers 400 for %s', async (_label, change) => {
    const s = await create();
    const reply = await platform.patch(`/v1/subscriptions/${s.id}`, change);
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    expectMatchesOpenApi('PATCH', `/v1/subscriptions/${s.id}`, reply);
  });

  it('answers 404 for an unknown subscription', async () => {
    const reply = await platform.patch('/api/v1/subscriptions/no-such-id', { total_seats: 3 });
    expect(reply.status).toBe(404);
    expectMatchesOpenApi('PATCH', '/api/v1/subscriptions/no-such-id', reply);
    expect((await platform.delete('/v1/subscriptions/no-such-id')).status).toBe(404);
  });

  it('refuses to lower total_seats below the assigned seats (409), and allows it down to them', async () => {
    const s = await create({ total_seats: 3 });
    for (const person of [tenant.admin, tenant.member]) {
      expect((await tenant.owner.api.post(`/api/v1/subscriptions/${s.id}/seats`, { user_id: person.id })).status).toBe(201);
    }
    const refused = await platform.patch(`/v1/subscriptions/${s.id}`, { total_seats: 1 });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('conflict');
    expectMatchesOpenApi('PATCH', `/v1/subscriptions/${s.id}`, refused);
    expect((await platform.patch(`/v1/subscriptions/${s.id}`, { total_seats: 0 })).status).toBe(409);
    const lowered = await platform.patch(`/v1/subscriptions/${s.id}`, { total_seats: 2 });
    expect(lowered.status).toBe(200);
    expect(lowered.body).toMatchObject({ total_seats: 2, assigned_seats: 2 });
  });
});
