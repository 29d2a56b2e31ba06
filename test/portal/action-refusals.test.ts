// Form actions refused by the service (an unknown or empty identifier, as a stale page or a hand-made post sends)
// answer the form with a 4xx and the service's message, never the 500 error page: every action of the catalog,
// subscription, app, organization and settings pages, posted as a browser without JavaScript posts it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn } from '../helpers/http.ts';
import { createTenant } from '../helpers/fixtures.ts';

let server: TestServer;
let session: string;

beforeAll(async () => {
  server = await startTestServer();
  session = (await signIn(server.url, ADMIN.email, ADMIN.password)).login.token;
});
afterAll(() => server?.stop());

/** POST a form to `page?/action` with the platform admin's session cookie. */
function post(page: string, action: string, fields: Record<string, string>): Promise<Response> {
  return fetch(`${server.url}${page}?/${action}`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      accept: 'text/html',
      origin: server.url,
      cookie: `tessera_session=${session}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams(fields).toString(),
  });
}

const UNKNOWN = '01a20000-0000-7000-8000-000000000000';
const cases: [string, string, Record<string, string>][] = [
  ['/admin/products', 'update', { id: UNKNOWN, name: 'X', slug: 'x', features: '' }],
  ['/admin/products', 'delete', { id: UNKNOWN, confirm: 'yes' }],
  [
    '/admin/subscriptions',
    'update',
    { id: UNKNOWN, totalSeats: '1', pricePerSeat: '1', status: 'active', endDate: '' },
  ],
  ['/admin/subscriptions', 'assign', { id: '', userId: '' }],
  ['/admin/subscriptions', 'assign', { id: UNKNOWN, userId: UNKNOWN }],
  ['/admin/subscriptions', 'unassign', { id: UNKNOWN, userId: UNKNOWN }],
  [
    '/admin/apps',
    'update',
    {
      id: UNKNOWN,
      name: 'X',
      webhookUrl: 'https://app.example.test/hook',
      redirectUris: 'https://app.example.test/cb',
      scopes: 'openid',
    },
  ],
  ['/admin/apps', 'rotate', { id: UNKNOWN }],
  ['/admin/apps', 'delete', { id: UNKNOWN, confirm: 'yes' }],
  ['/admin/apps', 'install', { id: UNKNOWN }],
  ['/admin/apps', 'uninstall', { id: UNKNOWN }],
  ['/admin/organizations', 'create', { name: '' }],
  ['/admin/organizations', 'rename', { id: UNKNOWN, name: 'X' }],
  ['/admin/organizations', 'rename', { id: '', name: 'X' }],
  [`/admin/organizations/${UNKNOWN}`, 'rename', { id: UNKNOWN, name: 'X' }],
  ['/admin/settings', 'rename', { name: '' }],
  ['/admin/settings', 'transfer', { userId: UNKNOWN, confirm: 'yes' }],
  ['/admin/settings', 'transfer', { userId: '', confirm: 'yes' }],
  // The platform admin has no second factor of their own to require one with.
  ['/admin/settings', 'requireMfa', { requireMfa: 'on' }],
  ['/admin/settings/members', 'resetMfa', { userId: UNKNOWN, confirm: 'yes' }],
  ['/admin/settings/members', 'resetMfa', { userId: '' }],
  ['/portal/security', 'confirmTotp', { code: '123456' }],
  ['/portal/security', 'confirmTotp', { code: '' }],
  ['/portal/security', 'removeTotp', {}],
  ['/portal/security', 'regenerateRecoveryCodes', { password: 'not the password' }],
  [`/admin/subscriptions/${UNKNOWN}`, 'assign', { userId: UNKNOWN }],
  [`/admin/subscriptions/${UNKNOWN}`, 'unassign', { userId: '' }],
  [`/admin/subscriptions/${UNKNOWN}`, 'cancel', { confirm: 'yes' }],
  [`/admin/subscriptions/${UNKNOWN}`, 'cancel', {}],
];

describe('a form action the service refuses', () => {
  it.each(cases)('%s ?/%s %j answers 4xx with the page, not 500', async (page, action, fields) => {
    const reply = await post(page, action, fields);
    const html = await reply.text();
    expect(reply.status, html.slice(0, 300)).toBeGreaterThanOrEqual(400);
    expect(reply.status, html.slice(0, 300)).toBeLessThan(500);
  });
});

describe('an impossible end date in the subscription form', () => {
  it('is refused by the API (4xx), not turned into another day by Date nor a 500', async () => {
    // given a subscription ending on 1 January 2027
    const platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
    const tenant = await createTenant(server.url, platform);
    const product = await platform.post('/v1/products', { name: 'Dated', slug: 'dated', features: [] });
    const created = await platform.post('/v1/subscriptions', {
      organization_id: tenant.id,
      product_id: product.body.id,
      total_seats: 1,
      price_per_seat: 1,
      billing_cycle: 'monthly',
      end_date: '2027-01-01T00:00:00Z',
    });
    expect(created.status).toBe(201);
    for (const endDate of ['2027-02-30', '2027-02-29', 'tomorrow']) {
      // when the form posts it
      const reply = await post('/admin/subscriptions', 'update', {
        id: created.body.id,
        totalSeats: '1',
        pricePerSeat: '1',
        status: 'active',
        endDate,
      });
      // then it is refused, and the end date stays
      expect(reply.status, endDate).toBeGreaterThanOrEqual(400);
      expect(reply.status, endDate).toBeLessThan(500);
      expect((await platform.get(`/v1/subscriptions/${created.body.id}`)).body.end_date, endDate).toBe(
        '2027-01-01T00:00:00.000Z',
      );
    }
    const real = await post('/admin/subscriptions', 'update', {
      id: created.body.id,
      totalSeats: '1',
      pricePerSeat: '1',
      status: 'active',
      endDate: '2028-02-29',
    });
    expect(real.status).toBeLessThan(400);
    expect((await platform.get(`/v1/subscriptions/${created.body.id}`)).body.end_date).toBe('2028-02-29T00:00:00.000Z');
  });
});
