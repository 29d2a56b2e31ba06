// An organization that requires a second factor (docs/architecture.md#second-factors): only its owners turn it on,
// and only with a factor of their own; a member without one is told so at sign-in and refused everywhere in that
// organization (403 mfa_enrollment_required) but at their own second-factor routes until they set one up; API keys are
// unaffected; members show mfa_enabled; an owner resets the factors of a member whose account the organization manages
// (its verified domain, docs/architecture.md#managed-accounts), and only then.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { movableClock, MINUTE } from '../helpers/clock.ts';
import { waitFor } from '../helpers/wait.ts';
import { codeAt, enrolTotp, toMidStep } from '../helpers/totp.ts';
import { startDnsServer, type TestDnsServer } from '../helpers/dns.ts';
import { proveDomain } from '../helpers/sso.ts';

const clock = movableClock();
let server: TestServer;
let platform: Client;
let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startDnsServer();
  server = await startTestServer({ clock, env: { DNS_SERVERS: dns.address } });
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
});
afterAll(async () => {
  await server?.stop();
  await dns?.stop();
});

// Every request comes from 127.0.0.1: each test starts after the sign-in throttle's window of those before it.
beforeEach(() => clock.advance(16 * MINUTE));

const requireMfa = (as: Client, organizationId: string, on: boolean) =>
  as.patch(`/v1/organizations/${organizationId}`, { require_mfa: on });

/** A member of the tenant whose account it manages: the tenant verifies a domain of its own, and invites an address there. */
async function managedMember(tenant: Tenant): Promise<Person> {
  const domain = `${tenant.id.slice(-12).toLowerCase()}.test`;
  await proveDomain(tenant.owner.api, dns, domain);
  return addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'managed', domain);
}

const passwordLogin = (person: { email: string }) =>
  client(server.url).post('/api/v1/auth/login', { email: person.email, password: PASSWORD });

/** A tenant whose owner has an authenticator app, with a subscription to see, and that requires a second factor. */
async function requiringTenant(): Promise<Tenant & { ownerSecret: string; subscriptionId: string }> {
  const tenant = await createTenant(server.url, platform);
  const product = await platform.post('/v1/products', {
    name: 'Policy',
    slug: `policy-${tenant.id.slice(-8)}`,
    features: ['a'],
  });
  expect(product.status, JSON.stringify(product.body)).toBe(201);
  const subscription = await platform.post('/api/v1/subscriptions', {
    organization_id: tenant.id,
    product_id: product.body.id,
    total_seats: 5,
    price_per_seat: 3,
    billing_cycle: 'monthly',
    status: 'active',
  });
  expect(subscription.status, JSON.stringify(subscription.body)).toBe(201);
  const { secret } = await enrolTotp(tenant.owner.api, clock);
  const on = await requireMfa(tenant.owner.api, tenant.id, true);
  expect(on.status, JSON.stringify(on.body)).toBe(200);
  return { ...tenant, ownerSecret: secret, subscriptionId: subscription.body.id };
}

/** What a member of `organizationId` reads there. */
const organizationRoutes = (organizationId: string, subscriptionId: string) => [
  `/v1/organizations/${organizationId}`,
  `/api/v1/subscriptions?organization_id=${organizationId}`,
  `/api/v1/subscriptions/${subscriptionId}`,
];

/** The subscriptions of every organization the caller may read (no filter): ids. */
const listedSubscriptions = async (api: Client) => {
  const reply = await api.get('/api/v1/subscriptions');
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body.subscriptions.map((s: { id: string }) => s.id);
};

async function expectHeldBack(api: Client, routes: string[]) {
  for (const route of routes) {
    const reply = await api.get(route);
    expect(reply.status, `${route} ${JSON.stringify(reply.body)}`).toBe(403);
    expect(reply.body.error, route).toBe('mfa_enrollment_required');
  }
}

async function expectOpen(api: Client, routes: string[]) {
  for (const route of routes) {
    const reply = await api.get(route);
    expect(reply.status, `${route} ${JSON.stringify(reply.body)}`).toBe(200);
  }
}

describe('the last second factor of a member of an organization that requires one', () => {
  it('cannot be removed: the owner who turned the requirement on is not shut out of it', async () => {
    const tenant = await requiringTenant();
    toMidStep(clock);
    const removal = await tenant.owner.api.delete('/api/v1/users/me/mfa/totp', { password: PASSWORD });
    expect(removal.status, JSON.stringify(removal.body)).toBe(409);
    expect(removal.body.error_description).toMatch(/requires a second factor/);
    expect((await tenant.owner.api.get('/api/v1/users/me/mfa')).body).toMatchObject({ totp: true });
    await expectOpen(tenant.owner.api, [`/v1/organizations/${tenant.id}`]);
    // Once the requirement is off, the factor may go.
    expect((await requireMfa(tenant.owner.api, tenant.id, false)).status).toBe(200);
    expect((await tenant.owner.api.delete('/api/v1/users/me/mfa/totp', { password: PASSWORD })).status).toBe(200);
  });
});

describe('PATCH /v1/organizations/{id} {require_mfa}', () => {
  it('is for owners only: an admin 403, an owner without a factor 409, an owner with one 200', async () => {
    const tenant = await createTenant(server.url, platform);
    const byAdmin = await requireMfa(tenant.admin.api, tenant.id, true);
    expect(byAdmin.status).toBe(403);
    expect(byAdmin.body.error).toBe('forbidden');
    // An admin with a factor is no owner either.
    await enrolTotp(tenant.admin.api, clock);
    expect((await requireMfa(tenant.admin.api, tenant.id, true)).status).toBe(403);

    const withoutFactor = await requireMfa(tenant.owner.api, tenant.id, true);
    expect(withoutFactor.status).toBe(409);
    expect(withoutFactor.body.error).toBe('conflict');
    expect((await tenant.owner.api.get(`/v1/organizations/${tenant.id}`)).body.require_mfa).toBe(false);

    await enrolTotp(tenant.owner.api, clock);
    const on = await requireMfa(tenant.owner.api, tenant.id, true);
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    expect(on.body).toMatchObject({ id: tenant.id, require_mfa: true });
    expect((await tenant.owner.api.get(`/v1/organizations/${tenant.id}`)).body.require_mfa).toBe(true);
    expect(
      await server.base.db.event.count({
        where: { kind: 'organization.updated', organizationId: tenant.id, body: { contains: 'requireMfa' } },
      }),
    ).toBe(1);

    // Off again, by the owner; an admin cannot turn it off either.
    expect((await requireMfa(tenant.admin.api, tenant.id, false)).status).toBe(403);
    const off = await requireMfa(tenant.owner.api, tenant.id, false);
    expect(off.status).toBe(200);
    expect(off.body.require_mfa).toBe(false);
  });

  it('refuses a value that is not a boolean with 400', async () => {
    const tenant = await createTenant(server.url, platform);
    await enrolTotp(tenant.owner.api, clock);
    for (const value of ['true', 1, null, { on: true }, 'a\u0000b']) {
      const reply = await tenant.owner.api.patch(`/v1/organizations/${tenant.id}`, { require_mfa: value });
      expect(reply.status, JSON.stringify(value)).toBe(400);
    }
    expect((await tenant.owner.api.get(`/v1/organizations/${tenant.id}`)).body.require_mfa).toBe(false);
  });
});

describe('a member without a second factor, where one is required', () => {
  it('is told at sign-in, held back everywhere in the organization but at their second-factor routes, and let in once set up', async () => {
    const tenant = await requiringTenant();
    const routes = organizationRoutes(tenant.id, tenant.subscriptionId);
    const login = await passwordLogin(tenant.member);
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    expect(login.body).toMatchObject({
      token: expect.any(String),
      organization: { id: tenant.id },
      mfa_enrollment_required: true,
    });
    const member = client(server.url, { token: login.body.token });

    await expectHeldBack(member, [...routes, `/v1/organizations/${tenant.id}/members`]);
    // A list over all of their organizations leaves this one out.
    expect(await listedSubscriptions(member)).not.toContain(tenant.subscriptionId);
    // Their own second-factor routes and who they are still answer.
    expect((await member.get('/api/v1/users/me/mfa')).body).toEqual({
      totp: false,
      totp_pending: false,
      passkeys: 0,
      recovery_codes_left: 0,
    });
    expect((await member.get('/api/v1/users/me')).status).toBe(200);
    expect((await member.get('/api/v1/auth/session')).status).toBe(200);

    // A pending app is no factor yet.
    const started = await member.post('/api/v1/users/me/mfa/totp', { password: PASSWORD });
    expect(started.status).toBe(201);
    await expectHeldBack(member, routes.slice(0, 2));
    toMidStep(clock);
    expect(
      (await member.post('/api/v1/users/me/mfa/totp/confirm', { code: codeAt(clock, started.body.secret) })).status,
    ).toBe(200);

    // Set up: the same session, and the invitation's older one, are let in.
    await expectOpen(member, routes);
    await expectOpen(tenant.member.api, routes);
    expect(await listedSubscriptions(member)).toContain(tenant.subscriptionId);
    const members = (await tenant.owner.api.get(`/v1/organizations/${tenant.id}/members`)).body.members;
    expect(members.find((m: any) => m.user_id === tenant.member.id).mfa_enabled).toBe(true);
  });

  it('does not hold back a member of an organization that does not require it', async () => {
    const tenant = await createTenant(server.url, platform);
    const login = await passwordLogin(tenant.member);
    expect(login.status).toBe(200);
    expect(login.body.mfa_enrollment_required).toBeUndefined();
    expect((await client(server.url, { token: login.body.token }).get(`/v1/organizations/${tenant.id}`)).status).toBe(
      200,
    );
  });

  it("holds back the admin's session too, while the organization's API keys are unaffected", async () => {
    const tenant = await createTenant(server.url, platform);
    const created = await tenant.admin.api.post('/api/v1/api-keys', { name: 'policy probe' });
    expect(created.status).toBe(201);
    await enrolTotp(tenant.owner.api, clock);
    expect((await requireMfa(tenant.owner.api, tenant.id, true)).status).toBe(200);

    await expectHeldBack(tenant.admin.api, [`/v1/organizations/${tenant.id}/members`, '/api/v1/api-keys']);
    expect((await tenant.admin.api.post('/api/v1/api-keys', { name: 'refused' })).status).toBe(403);

    const key = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    const members = await key.get(`/v1/organizations/${tenant.id}/members`);
    expect(members.status, JSON.stringify(members.body)).toBe(200);
    const byUser = new Map(members.body.members.map((m: any) => [m.user_id, m.mfa_enabled]));
    expect(Object.fromEntries(byUser)).toEqual({
      [tenant.owner.id]: true,
      [tenant.admin.id]: false,
      [tenant.member.id]: false,
    });
    expect((await key.get(`/v1/organizations/${tenant.id}`)).status).toBe(200);
  });
});

describe('the operator organization requiring a second factor', () => {
  it("holds back a platform admin without one: no platform powers, no organization's data", async () => {
    const operatorId =
      (await platform.get('/api/v1/users/me')).body.organization?.id ??
      (await platform.get('/api/v1/auth/session')).body.organization.id;
    const tenant = await requiringTenant();
    const colleague = await addPerson(server.url, platform, operatorId, 'admin', 'operator');
    expect((await colleague.api.get('/v1/users')).status).toBe(200);
    expect(await listedSubscriptions(colleague.api)).toContain(tenant.subscriptionId);

    await enrolTotp(platform, clock, ADMIN.password);
    expect((await requireMfa(platform, operatorId, true)).status).toBe(200);
    try {
      await expectHeldBack(colleague.api, [
        `/v1/organizations/${operatorId}/members`,
        `/v1/organizations/${tenant.id}`,
        `/api/v1/subscriptions?organization_id=${tenant.id}`,
      ]);
      expect(await listedSubscriptions(colleague.api)).toEqual([]);
      // Users: only themselves.
      const users = await colleague.api.get('/v1/users');
      expect(users.body.users?.map((u: { id: string }) => u.id) ?? users.status).toEqual([colleague.id]);
      // Someone they no longer see.
      expect((await colleague.api.patch(`/v1/users/${tenant.member.id}`, { name: 'renamed' })).status).toBe(404);
      expect(
        (await tenant.owner.api.get(`/v1/organizations/${tenant.id}/members`)).body.members.find(
          (m: any) => m.user_id === tenant.member.id,
        ).user.name,
      ).not.toBe('renamed');
    } finally {
      expect((await requireMfa(platform, operatorId, false)).status).toBe(200);
    }
  });
});

describe('DELETE /v1/organizations/{id}/members/{user_id}/mfa', () => {
  it("an owner resets a member's factors: 204, the factors gone, audited, mailed, 2fa.disabled, held back again", async () => {
    const tenant = await requiringTenant();
    const member = await managedMember(tenant);
    const { recoveryCodes } = await enrolTotp(member.api, clock);
    await expectOpen(member.api, [`/v1/organizations/${tenant.id}`]);

    const reply = await tenant.owner.api.delete(`/v1/organizations/${tenant.id}/members/${member.id}/mfa`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(204);
    expect(await server.base.db.totpFactor.count({ where: { userId: member.id } })).toBe(0);
    expect(await server.base.db.recoveryCode.count({ where: { userId: member.id } })).toBe(0);
    expect(await server.base.db.passkey.count({ where: { userId: member.id } })).toBe(0);
    const audits = await server.base.db.auditLog.findMany({
      where: { action: 'member.mfa.reset', organizationId: tenant.id, targetId: member.id },
    });
    expect(audits).toHaveLength(1);
    expect(audits[0]).toMatchObject({ actorId: tenant.owner.id, details: { totp: true, passkeys: 0 } });
    expect(await server.base.db.event.count({ where: { kind: '2fa.disabled', body: { contains: member.id } } })).toBe(
      1,
    );
    // Mailed twice: the app set up, then reset by the owner.
    await waitFor(async () =>
      (await server.base.db.mail.count({ where: { toAddress: member.email, kind: 'second_factor_changed' } })) === 2
        ? true
        : undefined,
    );

    // The member signs in with the password alone, and is held back until a factor is set up again.
    const login = await passwordLogin(member);
    expect(login.body).toMatchObject({ token: expect.any(String), mfa_enrollment_required: true });
    await expectHeldBack(member.api, [`/v1/organizations/${tenant.id}`]);
    const members = (await tenant.owner.api.get(`/v1/organizations/${tenant.id}/members`)).body.members;
    expect(members.find((m: any) => m.user_id === member.id).mfa_enabled).toBe(false);
    // The old recovery codes are gone with it.
    expect(recoveryCodes).toHaveLength(10);
    expect((await member.api.get('/api/v1/users/me/mfa')).body.recovery_codes_left).toBe(0);
  });

  it('is refused to an admin (403), to the owner of another organization (404) and to an owner who does not manage the account (403), and resets nothing', async () => {
    const tenant = await createTenant(server.url, platform);
    const other = await createTenant(server.url, platform);
    const member = await managedMember(tenant);
    await enrolTotp(member.api, clock);
    await enrolTotp(tenant.member.api, clock);
    const path = `/v1/organizations/${tenant.id}/members/${member.id}/mfa`;
    const byAdmin = await tenant.admin.api.delete(path);
    expect(byAdmin.status).toBe(403);
    expect(byAdmin.body.error).toBe('forbidden');
    const byStranger = await other.owner.api.delete(path);
    expect(byStranger.status).toBe(404);
    expect(byStranger.body.error).toBe('not_found');
    // Nor can an owner reset someone who is not their member.
    expect((await other.owner.api.delete(`/v1/organizations/${other.id}/members/${member.id}/mfa`)).status).toBe(404);
    // Nor a member whose address is outside the organization's verified domains: the factors are the account's.
    const unmanaged = await tenant.owner.api.delete(`/v1/organizations/${tenant.id}/members/${tenant.member.id}/mfa`);
    expect(unmanaged.status, JSON.stringify(unmanaged.body)).toBe(403);
    expect(unmanaged.body.error).toBe('forbidden');
    for (const id of [member.id, tenant.member.id]) {
      expect(await server.base.db.totpFactor.count({ where: { userId: id, confirmedAt: { not: null } } })).toBe(1);
      expect(await server.base.db.auditLog.count({ where: { action: 'member.mfa.reset', targetId: id } })).toBe(0);
      expect(await server.base.db.event.count({ where: { kind: '2fa.disabled', body: { contains: id } } })).toBe(0);
    }
  });

  it('resets once when 20 resets arrive at once: one 2fa.disabled, one mail', async () => {
    const tenant = await createTenant(server.url, platform);
    const member = await managedMember(tenant);
    await enrolTotp(member.api, clock);
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        tenant.owner.api.delete(`/v1/organizations/${tenant.id}/members/${member.id}/mfa`),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(204));
    expect(await server.base.db.event.count({ where: { kind: '2fa.disabled', body: { contains: member.id } } })).toBe(
      1,
    );
    expect(await server.base.db.totpFactor.count({ where: { userId: member.id } })).toBe(0);
    await waitFor(async () =>
      (await server.base.db.mail.count({ where: { toAddress: member.email, kind: 'second_factor_changed' } })) === 2
        ? true
        : undefined,
    );
  });

  it('is refused to an API key of the organization that is no owner (403)', async () => {
    const tenant = await createTenant(server.url, platform);
    await enrolTotp(tenant.member.api, clock);
    const created = await tenant.owner.api.post('/api/v1/api-keys', { name: 'reset probe', role: 'admin' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const key = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    expect((await key.delete(`/v1/organizations/${tenant.id}/members/${tenant.member.id}/mfa`)).status).toBe(403);
    expect(
      await server.base.db.totpFactor.count({ where: { userId: tenant.member.id, confirmedAt: { not: null } } }),
    ).toBe(1);
  });

  it('of a member without factors answers 204 and emits nothing', async () => {
    const tenant = await createTenant(server.url, platform);
    const member = await managedMember(tenant);
    const reply = await tenant.owner.api.delete(`/v1/organizations/${tenant.id}/members/${member.id}/mfa`);
    expect(reply.status).toBe(204);
    expect(await server.base.db.event.count({ where: { kind: '2fa.disabled', body: { contains: member.id } } })).toBe(
      0,
    );
  });
});
