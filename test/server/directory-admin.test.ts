// Directory settings over REST (docs/architecture.md#directory-provisioning): an organization's owners make and revoke
// SCIM tokens (shown once, never again; admins read them), owners and admins map directory groups to a role or a subscription's seats;
// members, access tokens and other organizations cannot.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';

let server: TestServer;
let platform: Client;
let acme: Tenant;
let other: Tenant;
let subscriptionId: string;

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  acme = await createTenant(server.url, platform, 'Acme');
  other = await createTenant(server.url, platform, 'Other');
  const product = await platform.post('/v1/products', { name: 'Seats', slug: 'seats-directory', features: ['a'] });
  const subscription = await platform.post('/api/v1/subscriptions', {
    organization_id: acme.id,
    product_id: product.body.id,
    total_seats: 3,
    price_per_seat: 1,
    billing_cycle: 'monthly',
    status: 'active',
  });
  subscriptionId = subscription.body.id;
});
afterAll(() => server?.stop());

const scim = (token: string) => client(server.url, { token });

describe('SCIM tokens', () => {
  it('are shown once, listed without the token, and stop working when revoked', async () => {
    const created = await acme.owner.api.post('/api/v1/scim-tokens', { name: 'Entra ID' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.token).toMatch(/^tsd_/);
    const listed = await acme.owner.api.get('/api/v1/scim-tokens');
    expect(listed.body.scim_tokens).toEqual([
      expect.objectContaining({ id: created.body.id, name: 'Entra ID', revoked_at: null }),
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.token);
    expect((await scim(created.body.token).get('/scim/v2/Users')).status).toBe(200);
    expect((await acme.owner.api.delete(`/api/v1/scim-tokens/${created.body.id}`)).status).toBe(204);
    expect((await scim(created.body.token).get('/scim/v2/Users')).status).toBe(401);
    expect((await acme.owner.api.get('/api/v1/scim-tokens')).body.scim_tokens[0].revoked_at).not.toBeNull();
  });

  it('are not for admins (who read them), members, other organizations, or anyone without a name', async () => {
    expect((await acme.admin.api.post('/api/v1/scim-tokens', { name: 'x' })).status).toBe(403);
    expect((await acme.admin.api.get('/api/v1/scim-tokens')).status).toBe(200);
    expect((await acme.member.api.post('/api/v1/scim-tokens', { name: 'x' })).status).toBe(403);
    expect((await acme.member.api.get('/api/v1/scim-tokens')).status).toBe(403);
    const created = await acme.owner.api.post('/api/v1/scim-tokens', { name: 'Okta' });
    expect((await other.owner.api.delete(`/api/v1/scim-tokens/${created.body.id}`)).status).toBe(404);
    expect((await other.owner.api.post('/api/v1/scim-tokens', { name: 'x', organization_id: acme.id })).status).toBe(
      404,
    );
    expect((await acme.owner.api.post('/api/v1/scim-tokens', { name: '' })).status).toBe(400);
    expect((await acme.owner.api.post('/api/v1/scim-tokens', { name: 'x', extra: 1 })).status).toBe(400);
  });
});

describe('group mappings', () => {
  it('map a group to a role or to a subscription, one of the two, once per group', async () => {
    const role = await acme.owner.api.post('/api/v1/directory/group-mappings', { group: 'Acme Admins', role: 'admin' });
    expect(role.status, JSON.stringify(role.body)).toBe(201);
    expect(role.body).toMatchObject({ group: 'Acme Admins', role: 'admin', subscription_id: null });
    const seats = await acme.owner.api.post('/api/v1/directory/group-mappings', {
      group: 'Insights users',
      subscription_id: subscriptionId,
    });
    expect(seats.status, JSON.stringify(seats.body)).toBe(201);
    expect(
      (await acme.owner.api.post('/api/v1/directory/group-mappings', { group: 'acme admins', role: 'member' })).status,
    ).toBe(409);
    for (const body of [
      { group: 'Both', role: 'admin', subscription_id: subscriptionId },
      { group: 'Neither' },
      { group: 'x', role: 'emperor' },
      { group: '', role: 'admin' },
    ]) {
      expect((await acme.owner.api.post('/api/v1/directory/group-mappings', body)).status, JSON.stringify(body)).toBe(
        400,
      );
    }
    // Only owners make a group that makes owners.
    expect(
      (await acme.admin.api.post('/api/v1/directory/group-mappings', { group: 'Owners', role: 'owner' })).status,
    ).toBe(403);
    // Another organization's subscription is not Acme's to give.
    expect(
      (
        await other.owner.api.post('/api/v1/directory/group-mappings', {
          group: 'Steal',
          subscription_id: subscriptionId,
        })
      ).status,
    ).toBe(400);
    const listed = await acme.admin.api.get('/api/v1/directory/group-mappings');
    expect(listed.body.group_mappings.map((m: { group: string }) => m.group)).toEqual([
      'Acme Admins',
      'Insights users',
    ]);
    expect((await other.owner.api.delete(`/api/v1/directory/group-mappings/${role.body.id}`)).status).toBe(404);
    expect((await acme.member.api.get('/api/v1/directory/group-mappings')).status).toBe(403);
    expect((await acme.owner.api.delete(`/api/v1/directory/group-mappings/${role.body.id}`)).status).toBe(204);
    expect((await acme.owner.api.delete(`/api/v1/directory/group-mappings/${role.body.id}`)).status).toBe(404);
  });
});
