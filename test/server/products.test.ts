// The product catalog over /v1/products: platform admins write it, every signed-in caller reads it; slugs are
// unique and well-formed; a product a subscription refers to cannot be deleted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';

let server: TestServer;
let platform: Client;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  tenant = await createTenant(server.url, platform);
});
afterAll(() => server?.stop());

const product = (slug: string, extra: Record<string, unknown> = {}) => ({
  name: `Product ${slug}`,
  slug,
  description: 'For tests',
  features: ['export', 'sso'],
  ...extra,
});

describe('POST /v1/products', () => {
  it('creates a product with camelCase fields for a platform admin', async () => {
    const reply = await platform.post('/v1/products', product('analytics'));
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    expectMatchesOpenApi('POST', '/v1/products', reply);
    expect(reply.body).toEqual({
      id: expect.any(String),
      name: 'Product analytics',
      slug: 'analytics',
      description: 'For tests',
      features: ['export', 'sso'],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const audit = await server.base.db.auditLog.findFirst({
      where: { action: 'product.create', targetId: reply.body.id },
    });
    expect(audit).toMatchObject({ outcome: 'success', actorType: 'user' });
  });

  it('needs only a name and a slug', async () => {
    const reply = await platform.post('/v1/products', { name: 'Bare', slug: 'bare' });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({ description: '', features: [] });
  });

  it('refuses a duplicate slug with 409', async () => {
    expect((await platform.post('/v1/products', product('dup'))).status).toBe(201);
    const again = await platform.post('/v1/products', product('dup', { name: 'Other' }));
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');
    expectMatchesOpenApi('POST', '/v1/products', again);
  });

  it.each([
    ['upper case', { slug: 'Analytics' }],
    ['spaces', { slug: 'my product' }],
    ['underscore', { slug: 'my_product' }],
    ['leading hyphen', { slug: '-x' }],
    ['empty', { slug: '' }],
    ['too long', { slug: 'a'.repeat(64) }],
    ['a standard scope', { slug: 'openid' }],
    ['no name', { name: undefined }],
    ['features not a list', { features: 'sso' }],
    ['a feature not a string', { features: [1] }],
    ['an unknown field', { price: 3 }],
    ['a slug of the wrong type', { slug: 42 }],
  ])('answers 400 for %s', async (_label, change) => {
    const reply = await platform.post('/v1/products', { ...product('valid-slug'), ...change });
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    expect(reply.body.error).toBe('invalid_request');
    expectMatchesOpenApi('POST', '/v1/products', reply);
  });

  it('accepts lowercase letters, digits and hyphens', async () => {
    expect((await platform.post('/v1/products', product('a-1-b2'))).status).toBe(201);
  });

  it('is refused to tenant owners (403), API keys of a tenant (403) and anonymous callers (401)', async () => {
    expect((await tenant.owner.api.post('/v1/products', product('by-owner'))).status).toBe(403);
    const key = await tenant.owner.api.post('/api/v1/api-keys', { name: 'catalog' });
    const keyClient = client(server.url, { apiKey: { key: key.body.key, secret: key.body.secret } });
    expect((await keyClient.post('/v1/products', product('by-key'))).status).toBe(403);
    const anon = await client(server.url).post('/v1/products', product('by-nobody'));
    expect(anon.status).toBe(401);
    expectMatchesOpenApi('POST', '/v1/products', anon);
  });
});

describe('GET /v1/products and /v1/products/{slug}', () => {
  it('lets every signed-in caller read the catalog, paged with next_cursor', async () => {
    for (const slug of ['page-a', 'page-b', 'page-c']) await platform.post('/v1/products', product(slug));
    const first = await tenant.member.api.get('/v1/products?limit=2');
    expect(first.status).toBe(200);
    expectMatchesOpenApi('GET', '/v1/products?limit=2', first);
    expect(first.body.products).toHaveLength(2);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await tenant.member.api.get(`/v1/products?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      all.push(...page.body.products.map((p: { slug: string }) => p.slug));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(all).toEqual(expect.arrayContaining(['page-a', 'page-b', 'page-c']));
    expect(new Set(all).size).toBe(all.length);
    expect((await tenant.member.api.get('/v1/products?limit=0')).status).toBe(400);
    expect((await client(server.url).get('/v1/products')).status).toBe(401);
  });

  it('reads one product by slug; an unknown slug is 404', async () => {
    await platform.post('/v1/products', product('by-slug'));
    const reply = await tenant.member.api.get('/v1/products/by-slug');
    expect(reply.status).toBe(200);
    expectMatchesOpenApi('GET', '/v1/products/by-slug', reply);
    expect(reply.body.slug).toBe('by-slug');
    const missing = await tenant.member.api.get('/v1/products/no-such-product');
    expect(missing.status).toBe(404);
    expectMatchesOpenApi('GET', '/v1/products/no-such-product', missing);
  });
});

describe('PATCH /v1/products/{id}', () => {
  it('changes the given fields only and records the change', async () => {
    const created = await platform.post('/v1/products', product('editable'));
    const reply = await platform.patch(`/v1/products/${created.body.id}`, {
      description: 'New words',
      features: ['api', 'api', 'export'],
    });
    expect(reply.status).toBe(200);
    expectMatchesOpenApi('PATCH', `/v1/products/${created.body.id}`, reply);
    expect(reply.body).toMatchObject({
      name: 'Product editable',
      slug: 'editable',
      description: 'New words',
      features: ['api', 'export'],
    });
    expect(new Date(reply.body.updatedAt) >= new Date(created.body.updatedAt)).toBe(true);
    const audit = await server.base.db.auditLog.findFirst({
      where: { action: 'product.update', targetId: created.body.id },
    });
    expect(audit?.details).toEqual({ fields: ['description', 'features'] });
  });

  it('refuses a slug taken by another product (409), a bad slug (400), unknown ids (404) and non-admins (403)', async () => {
    const a = await platform.post('/v1/products', product('rename-a'));
    await platform.post('/v1/products', product('rename-b'));
    expect((await platform.patch(`/v1/products/${a.body.id}`, { slug: 'rename-b' })).status).toBe(409);
    expect((await platform.patch(`/v1/products/${a.body.id}`, { slug: 'Rename B' })).status).toBe(400);
    expect((await platform.patch(`/v1/products/${a.body.id}`, { name: null })).status).toBe(400);
    expect((await platform.patch(`/v1/products/${a.body.id}`, { colour: 'red' })).status).toBe(400);
    expect((await platform.patch('/v1/products/no-such-id', { name: 'x' })).status).toBe(404);
    expect((await tenant.owner.api.patch(`/v1/products/${a.body.id}`, { name: 'x' })).status).toBe(403);
    const renamed = await platform.patch(`/v1/products/${a.body.id}`, { slug: 'rename-c' });
    expect(renamed.body.slug).toBe('rename-c');
  });
});

describe('DELETE /v1/products/{id}', () => {
  it('deletes an unused product', async () => {
    const created = await platform.post('/v1/products', product('doomed'));
    expect((await tenant.owner.api.delete(`/v1/products/${created.body.id}`)).status).toBe(403);
    const reply = await platform.delete(`/v1/products/${created.body.id}`);
    expect(reply.status).toBe(204);
    expectMatchesOpenApi('DELETE', `/v1/products/${created.body.id}`, reply);
    expect((await platform.get('/v1/products/doomed')).status).toBe(404);
    expect((await platform.delete(`/v1/products/${created.body.id}`)).status).toBe(404);
    expect(
      await server.base.db.auditLog.count({ where: { action: 'product.delete', targetId: created.body.id } }),
    ).toBe(1);
  });

  it('answers 409 while a subscription refers to the product, even a cancelled one', async () => {
    const created = await platform.post('/v1/products', product('subscribed'));
    const sub = await platform.post('/v1/subscriptions', {
      organization_id: tenant.id,
      product_id: created.body.id,
      total_seats: 1,
      price_per_seat: 5,
      billing_cycle: 'monthly',
      status: 'active',
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    expect((await platform.delete(`/v1/subscriptions/${sub.body.id}`)).status).toBe(200);
    const reply = await platform.delete(`/v1/products/${created.body.id}`);
    expect(reply.status).toBe(409);
    expect(reply.body.error).toBe('conflict');
    expectMatchesOpenApi('DELETE', `/v1/products/${created.body.id}`, reply);
    expect((await platform.get('/v1/products/subscribed')).status).toBe(200);
  });
});
