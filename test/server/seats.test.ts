// Seats over /api/v1/subscriptions/{id}/seats: an organization's admins give seats to members; assigned seats
// never exceed total_seats, even under 50 concurrent assignments; removing a member or deleting a user frees seats.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';

let server: TestServer;
let platform: Client;
let tenant: Tenant;
let other: Tenant;
let productId: string;

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  [tenant, other] = await Promise.all([createTenant(server.url, platform), createTenant(server.url, platform)]);
  productId = (await platform.post('/v1/products', { name: 'Seats', slug: 'seats', features: ['x'] })).body.id;
});
afterAll(() => server?.stop());

async function subscription(extra: Record<string, unknown> = {}, organizationId = tenant.id) {
  const reply = await platform.post('/api/v1/subscriptions', {
    organization_id: organizationId,
    product_id: productId,
    total_seats: 2,
    price_per_seat: 10,
    billing_cycle: 'yearly',
    status: 'active',
    ...extra,
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body as { id: string };
}

const seatsPath = (id: string) => `/api/v1/subscriptions/${id}/seats`;

describe('POST /api/v1/subscriptions/{id}/seats', () => {
  it("gives an organization's member a seat, lists it, and takes it back", async () => {
    const s = await subscription();
    const given = await tenant.admin.api.post(seatsPath(s.id), { user_id: tenant.member.id });
    expect(given.status, JSON.stringify(given.body)).toBe(201);
    expectMatchesOpenApi('POST', seatsPath(s.id), given);
    expect(given.body).toEqual({
      id: expect.any(String),
      subscription_id: s.id,
      user_id: tenant.member.id,
      user: { id: tenant.member.id, email: tenant.member.email, name: 'member' },
      assigned_at: expect.any(String),
    });
    expect((await tenant.member.api.get(`/api/v1/subscriptions/${s.id}`)).body.assigned_seats).toBe(1);

    const listed = await tenant.owner.api.get(seatsPath(s.id));
    expect(listed.status).toBe(200);
    expectMatchesOpenApi('GET', seatsPath(s.id), listed);
    expect(listed.body).toEqual({ seats: [given.body], next_cursor: null });

    const taken = await tenant.admin.api.delete(`${seatsPath(s.id)}/${tenant.member.id}`);
    expect(taken.status).toBe(204);
    expectMatchesOpenApi('DELETE', `${seatsPath(s.id)}/${tenant.member.id}`, taken);
    expect((await tenant.owner.api.get(seatsPath(s.id))).body.seats).toEqual([]);
    const again = await tenant.admin.api.delete(`${seatsPath(s.id)}/${tenant.member.id}`);
    expect(again.status).toBe(404);
    expectMatchesOpenApi('DELETE', `${seatsPath(s.id)}/${tenant.member.id}`, again);

    const audit = await server.base.db.auditLog.findMany({
      where: { targetId: s.id, action: { startsWith: 'subscription.seat.' } },
      orderBy: { id: 'asc' },
    });
    expect(audit.map((a) => [a.action, (a.details as { userId: string }).userId])).toEqual([
      ['subscription.seat.assign', tenant.member.id],
      ['subscription.seat.unassign', tenant.member.id],
    ]);
  });

  it('lets platform admins assign too', async () => {
    const s = await subscription();
    expect((await platform.post(seatsPath(s.id), { user_id: tenant.owner.id })).status).toBe(201);
  });

  it('refuses members (403), other tenants (404), unknown subscriptions (404) and anonymous callers (401)', async () => {
    const s = await subscription();
    const member = await tenant.member.api.post(seatsPath(s.id), { user_id: tenant.member.id });
    expect(member.status).toBe(403);
    expectMatchesOpenApi('POST', seatsPath(s.id), member);
    expect((await tenant.member.api.get(seatsPath(s.id))).status).toBe(403);
    expect((await tenant.member.api.delete(`${seatsPath(s.id)}/${tenant.member.id}`)).status).toBe(403);
    for (const call of [
      other.admin.api.post(seatsPath(s.id), { user_id: other.member.id }),
      other.admin.api.get(seatsPath(s.id)),
      other.admin.api.delete(`${seatsPath(s.id)}/${tenant.member.id}`),
      tenant.admin.api.post(seatsPath('no-such-subscription'), { user_id: tenant.member.id }),
    ]) {
      expect((await call).status).toBe(404);
    }
    expect((await client(server.url).post(seatsPath(s.id), { user_id: tenant.member.id })).status).toBe(401);
  });

  it('gives seats only to members of the organization (400), once each (409), on live subscriptions (409)', async () => {
    const s = await subscription();
    const outsider = await tenant.admin.api.post(seatsPath(s.id), { user_id: other.member.id });
    expect(outsider.status).toBe(400);
    expect(outsider.body.details).toEqual([{ path: 'user_id', message: 'is not a member of the organization' }]);
    expectMatchesOpenApi('POST', seatsPath(s.id), outsider);
    expect((await tenant.admin.api.post(seatsPath(s.id), { user_id: 'no-such-user' })).status).toBe(400);

    expect((await tenant.admin.api.post(seatsPath(s.id), { user_id: tenant.member.id })).status).toBe(201);
    const twice = await tenant.admin.api.post(seatsPath(s.id), { user_id: tenant.member.id });
    expect(twice.status).toBe(409);
    expectMatchesOpenApi('POST', seatsPath(s.id), twice);

    for (const status of ['cancelled', 'expired']) {
      const dead = await subscription({ status });
      expect((await tenant.admin.api.post(seatsPath(dead.id), { user_id: tenant.member.id })).status).toBe(409);
    }
    expect(
      (
        await tenant.admin.api.post(seatsPath((await subscription({ status: 'trial' })).id), {
          user_id: tenant.member.id,
        })
      ).status,
    ).toBe(201);
  });

  it('answers 409 when every seat is taken', async () => {
    const s = await subscription({ total_seats: 1 });
    expect((await tenant.admin.api.post(seatsPath(s.id), { user_id: tenant.member.id })).status).toBe(201);
    const full = await tenant.admin.api.post(seatsPath(s.id), { user_id: tenant.admin.id });
    expect(full.status).toBe(409);
    expect(full.body.error_description).toMatch(/All 1 seats/);
  });

  it.each([
    ['no user_id', {}],
    ['a user_id of the wrong type', { user_id: { id: 'x' } }],
    ['an unknown field', { user_id: 'x', role: 'admin' }],
  ])('answers 400 for %s', async (_label, payload) => {
    const s = await subscription();
    const reply = await tenant.admin.api.post(seatsPath(s.id), payload);
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    expectMatchesOpenApi('POST', seatsPath(s.id), reply);
  });

  it('never assigns more than total_seats: 50 concurrent assignments on 10 seats give exactly 10', async () => {
    // Fifty members, written straight to the database: the race is about seats, not about sign-ups.
    const users = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        server.base.db.user.create({
          data: {
            email: `racer-${i}-${Date.now()}@example.test`,
            passwordHash: 'not used',
            memberships: { create: { organizationId: tenant.id, role: 'member' } },
          },
        }),
      ),
    );
    const s = await subscription({ total_seats: 10 });
    const replies = await Promise.all(users.map((u) => tenant.admin.api.post(seatsPath(s.id), { user_id: u.id })));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((st) => st === 201)).toHaveLength(10);
    expect(statuses.filter((st) => st === 409)).toHaveLength(40);
    expect(await server.base.db.seatAssignment.count({ where: { subscriptionId: s.id } })).toBe(10);
    expect((await platform.get(`/api/v1/subscriptions/${s.id}`)).body.assigned_seats).toBe(10);
  });
});

describe('seats follow memberships', () => {
  it('frees the seats of a removed member, in that organization only', async () => {
    const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'leaver');
    const s = await subscription();
    expect((await tenant.admin.api.post(seatsPath(s.id), { user_id: person.id })).status).toBe(201);
    expect((await tenant.admin.api.delete(`/v1/organizations/${tenant.id}/members/${person.id}`)).status).toBe(204);
    expect((await tenant.admin.api.get(seatsPath(s.id))).body.seats).toEqual([]);
    expect((await platform.get(`/v1/subscriptions/${s.id}`)).body.assigned_seats).toBe(0);
  });

  it('frees the seats of a deleted user', async () => {
    const person = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'deleted');
    const s = await subscription();
    expect((await tenant.admin.api.post(seatsPath(s.id), { user_id: person.id })).status).toBe(201);
    expect((await person.api.delete('/api/v1/users/me', { password: PASSWORD })).status).toBe(204);
    expect((await tenant.admin.api.get(seatsPath(s.id))).body.seats).toEqual([]);
  });
});
