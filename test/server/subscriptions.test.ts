// Subscriptions over /v1/subscriptions and /api/v1/subscriptions: platform admins create and change them, an
// organization's members read their own, another tenant's answer 404; status follows the interface's table row by
// row; price_per_seat is exact; every change leaves its events and an audit entry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';
import { TIMESTAMP_RULE } from '../../schema/lib/input.ts';

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
  organization_id: tenant.id,
  product_id: productId,
  total_seats: 10,
  price_per_seat: 19.99,
  billing_cycle: 'monthly',
  status: 'active',
  ...extra,
});

async function create(extra: Record<string, unknown> = {}, prefix: string = '/v1') {
  const reply = await platform.post(`${prefix}/subscriptions`, body(extra));
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

const eventsOf = async (id: string) =>
  (
    await server.base.db.event.findMany({ where: { kind: { startsWith: 'subscription.' } }, orderBy: { id: 'asc' } })
  ).filter((e) => JSON.parse(e.body).data.subscription.id === id);

describe('POST /subscriptions', () => {
  it.each(PREFIXES)('creates a subscription with the snake_case fields under %s', async (prefix) => {
    const reply = await platform.post(`${prefix}/subscriptions`, body({ end_date: '2027-06-30T00:00:00.000Z' }));
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expectMatchesOpenApi('POST', `${prefix}/subscriptions`, reply);
    expect(reply.body).toEqual({
      id: expect.any(String),
      organization_id: tenant.id,
      product_id: productId,
      total_seats: 10,
      assigned_seats: 0,
      price_per_seat: 19.99,
      billing_cycle: 'monthly',
      status: 'active',
      end_date: '2027-06-30T00:00:00.000Z',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('keeps the price exact: numeric in the database, the same number on the wire', async () => {
    const s = await create({ price_per_seat: 0.1 });
    const [row] = await server.base.db.$queryRaw<
      { price: string }[]
    >`select price_per_seat::text as price from subscriptions where id = ${s.id}`;
    expect(row!.price).toBe('0.10');
    const patched = await platform.patch(`/v1/subscriptions/${s.id}`, { price_per_seat: 19.99 });
    const [after] = await server.base.db.$queryRaw<
      { price: string }[]
    >`select price_per_seat::text as price from subscriptions where id = ${s.id}`;
    expect(after!.price).toBe('19.99');
    const text = await (
      await fetch(`${server.url}/v1/subscriptions/${s.id}`, {
        headers: { authorization: `Bearer ${tenant.member.token}` },
      })
    ).text();
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
    expect(JSON.parse(events[0]!.body).data.subscription).toMatchObject({
      id: s.id,
      organization_id: tenant.id,
      product_id: productId,
      price_per_seat: 19.99,
      total_seats: 10,
      status: 'active',
    });
    expect(
      await server.base.db.auditLog.count({
        where: { action: 'subscription.create', targetId: s.id, organizationId: tenant.id },
      }),
    ).toBe(1);
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
      expect(listed.body.subscriptions.every((s: { organization_id: string }) => s.organization_id === tenant.id)).toBe(
        true,
      );
    }
    const trials = await platform.get(`/api/v1/subscriptions?status=trial&organization_id=${other.id}`);
    expect(trials.body.subscriptions.map((s: { id: string }) => s.id)).toEqual([theirs.id]);
    const everything = await platform.get('/v1/subscriptions?status=trial&limit=100');
    expect(everything.body.subscriptions.map((s: { id: string }) => s.id)).toEqual(
      expect.arrayContaining([mine.id, theirs.id]),
    );
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
        const reply = await platform.patch(`/v1/subscriptions/${s.id}`, {
          status: to,
          total_seats: 12,
          price_per_seat: 9.5,
          end_date: '2028-01-01T00:00:00.000Z',
        });
        expect(reply.status, JSON.stringify(reply.body)).toBe(200);
        expectMatchesOpenApi('PATCH', `/v1/subscriptions/${s.id}`, reply);
        expect(reply.body).toMatchObject({
          status: to,
          total_seats: 12,
          price_per_seat: 9.5,
          end_date: '2028-01-01T00:00:00.000Z',
        });
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
    expect(kinds).toEqual(
      from === 'cancelled' ? ['subscription.created'] : ['subscription.created', 'subscription.cancelled'],
    );
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
    expect(kinds).toEqual(
      from === 'cancelled' ? ['subscription.created'] : ['subscription.created', 'subscription.cancelled'],
    );
    expect(await server.base.db.auditLog.count({ where: { action: 'subscription.cancel', targetId: s.id } })).toBe(
      from === 'cancelled' ? 0 : 1,
    );
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
      'subscription.updated',
      'subscription.renewed',
      'subscription.updated',
    ]);
    expect(JSON.parse(events[3]!.body).data).toMatchObject({
      changes: ['end_date'],
      previous_end_date: '2027-01-01T00:00:00.000Z',
      subscription: { end_date: '2028-01-01T00:00:00.000Z' },
    });
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
      expect((await tenant.owner.api.post(`/api/v1/subscriptions/${s.id}/seats`, { user_id: person.id })).status).toBe(
        201,
      );
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

// S8: end_date is read by one strict rule (RFC 3339 date-time with a zone) on REST and GraphQL alike. Date's own
// parser took HTTP dates and bare years and rolled 30 February over to 2 March; none of that may be stored.
describe('end_date is a strict RFC 3339 date-time', () => {
  const REFUSED: [label: string, value: string][] = [
    ['30 February (was stored as 2 March)', '2027-02-30T00:00:00Z'],
    ['an HTTP date', 'Tue, 01 Jan 2030 00:00:00 GMT'],
    ['a bare year', '2030'],
    ['month 13', '2027-13-01T00:00:00Z'],
    ['29 February of a common year', '2027-02-29T00:00:00Z'],
    ['31 April', '2027-04-31T00:00:00Z'],
    ['hour 24', '2027-06-30T24:00:00Z'],
    ['minute 60', '2027-06-30T12:60:00Z'],
    ['second 60 (a leap second a Date cannot hold)', '2027-06-30T23:59:60Z'],
    ['second 61', '2027-06-30T12:00:61Z'],
    ['no zone', '2027-06-30T00:00:00'],
    ['a space instead of T', '2027-06-30 00:00:00Z'],
    ['a date without a time (the interface takes a timestamp)', '2027-06-30'],
    ['no seconds', '2027-06-30T00:00Z'],
    ['an offset without a colon', '2027-06-30T00:00:00+0200'],
    ['offset hour 24', '2027-06-30T00:00:00+24:00'],
    ['a comma for the fraction point', '2027-06-30T00:00:00,5Z'],
    ['trailing garbage', '2027-06-30T00:00:00Zjunk'],
    ['a trailing newline', '2027-06-30T00:00:00Z\n'],
    ['leading space', ' 2027-06-30T00:00:00Z'],
    ['a NUL', '2027-06-30T00:00:00Z\u0000'],
    ['an empty string', ''],
  ];
  const ACCEPTED: [label: string, value: string, stored: string][] = [
    ['Z', '2027-06-30T00:00:00Z', '2027-06-30T00:00:00.000Z'],
    ['lower-case t and z (RFC 3339 5.6)', '2027-06-30t00:00:00z', '2027-06-30T00:00:00.000Z'],
    ['a +02:00 offset', '2027-06-30T02:00:00+02:00', '2027-06-30T00:00:00.000Z'],
    ['a negative offset across midnight', '2027-06-29T19:30:00-04:30', '2027-06-30T00:00:00.000Z'],
    ['fractional seconds', '2027-06-30T00:00:00.25Z', '2027-06-30T00:00:00.250Z'],
    ['nanoseconds (kept to the millisecond)', '2027-06-30T00:00:00.123456789Z', '2027-06-30T00:00:00.123Z'],
    ['29 February of a leap year', '2028-02-29T00:00:00Z', '2028-02-29T00:00:00.000Z'],
  ];
  const NUL_MESSAGE = 'must not contain NUL (U+0000) characters';
  const why = (value: string) => (value.includes('\u0000') ? NUL_MESSAGE : TIMESTAMP_RULE);
  const stored = async (id: string) =>
    (await server.base.db.subscription.findUniqueOrThrow({ where: { id } })).endDate?.toISOString() ?? null;
  const countOf = () => server.base.db.subscription.count({ where: { organizationId: tenant.id } });
  const gql = (query: string, variables: Record<string, unknown>) => platform.post('/graphql', { query, variables });
  const CREATE =
    'mutation($input: CreateSubscriptionInput!) { createSubscription(input: $input) { __typename ... on Subscription { id endDate } } }';
  const UPDATE =
    'mutation($id: ID!, $input: UpdateSubscriptionInput!) { updateSubscription(id: $id, input: $input) { __typename ... on Subscription { id endDate } } }';
  const gqlInput = (endDate: unknown) => ({
    organizationId: tenant.id,
    productId,
    totalSeats: 1,
    pricePerSeat: '1.00',
    billingCycle: 'monthly',
    endDate,
  });

  it.each(REFUSED)(
    'refuses %s on REST create under /v1 and /api/v1: 400 naming end_date, nothing stored',
    async (_label, value) => {
      const before = await countOf();
      for (const prefix of PREFIXES) {
        const reply = await platform.post(`${prefix}/subscriptions`, body({ end_date: value }));
        expect(reply.status, JSON.stringify(reply.body)).toBe(400);
        expect(reply.body.error).toBe('invalid_request');
        expect(reply.body.details).toEqual([{ path: 'end_date', message: why(value) }]);
        expectMatchesOpenApi('POST', `${prefix}/subscriptions`, reply);
      }
      expect(await countOf()).toBe(before);
    },
  );

  it.each(REFUSED)('refuses %s on REST update: 400 naming end_date, the end date unchanged', async (_label, value) => {
    const s = await create({ end_date: '2027-01-01T00:00:00.000Z' });
    for (const prefix of PREFIXES) {
      const reply = await platform.patch(`${prefix}/subscriptions/${s.id}`, { end_date: value, total_seats: 3 });
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.body.error).toBe('invalid_request');
      expect(reply.body.details).toEqual([{ path: 'end_date', message: why(value) }]);
    }
    const row = await server.base.db.subscription.findUniqueOrThrow({ where: { id: s.id } });
    expect({ endDate: row.endDate?.toISOString(), totalSeats: row.totalSeats }).toEqual({
      endDate: '2027-01-01T00:00:00.000Z',
      totalSeats: 10,
    });
    expect((await eventsOf(s.id)).map((e) => e.kind)).toEqual(['subscription.created']);
  });

  it.each(REFUSED)(
    'refuses %s in GraphQL variables: 400 invalid_request at input.endDate, nothing stored',
    async (_label, value) => {
      const s = await create({ end_date: '2027-01-01T00:00:00.000Z' });
      const before = await countOf();
      for (const [query, variables] of [
        [CREATE, { input: gqlInput(value) }],
        [UPDATE, { id: s.id, input: { endDate: value } }],
      ] as const) {
        const reply = await gql(query, variables);
        // A NUL is refused at the door of /graphql for every operation (server/graphql/yoga.ts decides its status).
        if (!value.includes('\u0000')) expect(reply.status, JSON.stringify(reply.body)).toBe(400);
        expect(reply.body.errors[0].extensions.code).toBe('invalid_request');
        if (value.includes('\u0000'))
          expect(reply.body.errors[0].extensions.details).toEqual([
            { path: 'variables.input.endDate', message: NUL_MESSAGE },
          ]);
        else expect(reply.body.errors[0].message).toContain(`at "input.endDate"; ${TIMESTAMP_RULE}`);
        expect(reply.body.data ?? null).toBeNull();
      }
      expect(await countOf()).toBe(before);
      expect(await stored(s.id)).toBe('2027-01-01T00:00:00.000Z');
    },
  );

  it('refuses an impossible date written in the GraphQL document too, locating the value', async () => {
    const s = await create({ end_date: '2027-01-01T00:00:00.000Z' });
    const reply = await gql(
      `mutation { updateSubscription(id: "${s.id}", input: { endDate: "2027-02-30T00:00:00Z" }) { __typename } }`,
      {},
    );
    // A document that does not validate, as with any literal of the wrong type (Int, enums).
    expect(reply.body.errors[0].message).toBe(
      `Expected value of type "DateTime", found "2027-02-30T00:00:00Z"; ${TIMESTAMP_RULE}`,
    );
    expect(reply.body.errors[0].locations).toEqual([expect.objectContaining({ line: 1 })]);
    expect(reply.body.data ?? null).toBeNull();
    expect(await stored(s.id)).toBe('2027-01-01T00:00:00.000Z');
  });

  it('refuses a number or an object as end_date with the same rule', async () => {
    for (const value of [2030, { $date: '2030-01-01T00:00:00Z' }, true]) {
      const reply = await platform.post('/v1/subscriptions', body({ end_date: value }));
      expect(reply.status).toBe(400);
      expect(reply.body.details).toEqual([{ path: 'end_date', message: TIMESTAMP_RULE }]);
      const viaGraphql = await gql(CREATE, { input: gqlInput(value) });
      expect(viaGraphql.status).toBe(400);
      expect(viaGraphql.body.errors[0].message).toContain(TIMESTAMP_RULE);
    }
  });

  it.each(ACCEPTED)(
    'stores %s as the instant it names, on REST create and update and GraphQL',
    async (_label, value, instant) => {
      const created = await create({ end_date: value });
      expect(created.end_date).toBe(instant);
      expect(await stored(created.id)).toBe(instant);

      const s = await create({ end_date: '2027-01-01T00:00:00.000Z' });
      const patched = await platform.patch(`/api/v1/subscriptions/${s.id}`, { end_date: value });
      expect(patched.status, JSON.stringify(patched.body)).toBe(200);
      expect(patched.body.end_date).toBe(instant);
      expect(await stored(s.id)).toBe(instant);

      const viaGraphql = await gql(CREATE, { input: gqlInput(value) });
      expect(viaGraphql.body.data?.createSubscription, JSON.stringify(viaGraphql.body)).toMatchObject({
        __typename: 'Subscription',
        endDate: instant,
      });
      expect(await stored(viaGraphql.body.data.createSubscription.id)).toBe(instant);
    },
  );
});
