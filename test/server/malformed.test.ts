// Hostile input against every REST route in the tables: whatever is sent, the answer is a 4xx in the one
// error shape {error, error_description}, never a 5xx. A route added to a table is fuzzed here automatically;
// a new table mounted in server/app.ts is added to ROUTES below.
import { randomBytes, randomUUID } from 'node:crypto';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { print } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiV1Routes } from '../../server/rest/api-v1.ts';
import { v1Routes } from '../../server/rest/v1.ts';
import { oauthClientRoutes } from '../../server/rest/oauth-clients.ts';
import type { RestRoute } from '../../server/rest/route.ts';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn } from '../helpers/http.ts';
import { createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';

interface Route extends RestRoute {
  prefix: '/api/v1' | '/v1';
  label: string;
}

const ROUTES: Route[] = [
  ...[...apiV1Routes, ...oauthClientRoutes].map((r) => ({
    ...r,
    prefix: '/api/v1' as const,
    label: `${r.method} /api/v1${r.path}`,
  })),
  ...v1Routes.map((r) => ({ ...r, prefix: '/v1' as const, label: `${r.method} /v1${r.path}` })),
];
const takesBody = (r: RestRoute) => r.body ?? (r.method === 'POST' || r.method === 'PATCH');
const BODY_ROUTES = ROUTES.filter(takesBody);
const PARAM_ROUTES = ROUTES.filter((r) => r.path.includes(':'));
const GET_ROUTES = ROUTES.filter((r) => r.method === 'GET');
const PAGED_ROUTES = GET_ROUTES.filter((r) => print(r.operation).includes('$limit'));
const PRIVATE_ROUTES = ROUTES.filter((r) => !r.public);
/** Body fields whose values are numbers. */
const NUMERIC_FIELDS = ['total_seats', 'price_per_seat'];

let server: TestServer;
let tenant: Tenant;
let adminToken: string;
let apiKeyId: string;
let invitationId: string;
let oauthClientId: string;
let productId: string;
let subscriptionId: string;
let webhookId: string;

beforeAll(async () => {
  // The webhook fixture's host resolves to a public documentation address: creation passes the SSRF check.
  server = await startTestServer({ webhookResolver: async () => [{ address: '203.0.113.10', family: 4 }] });
  const admin = await signIn(server.url, ADMIN.email, ADMIN.password);
  adminToken = admin.login.token;
  tenant = await createTenant(server.url, admin.api);
  const key = await tenant.owner.api.post('/api/v1/api-keys', { name: 'fuzz target' });
  apiKeyId = key.body.id;
  const invitation = await tenant.owner.api.post(`/v1/organizations/${tenant.id}/invitations`, {
    email: 'invited@example.test',
    role: 'member',
  });
  invitationId = invitation.body.id;
  const oauthClient = await tenant.owner.api.post('/api/v1/oauth-clients', {
    name: 'fuzz target',
    redirect_uris: ['https://app.example.test/callback'],
    allowed_scopes: ['openid'],
  });
  oauthClientId = oauthClient.body.id;
  expect([key.status, invitation.status, oauthClient.status]).toEqual([201, 201, 201]);
  const product = await admin.api.post('/v1/products', { name: 'Fuzz target', slug: 'fuzz-target' });
  productId = product.body.id;
  const subscription = await admin.api.post('/v1/subscriptions', {
    organization_id: tenant.id,
    product_id: productId,
    total_seats: 1,
    price_per_seat: 1,
    billing_cycle: 'monthly',
    status: 'active',
  });
  subscriptionId = subscription.body.id;
  const webhook = await tenant.owner.api.post('/api/v1/webhooks', {
    url: 'https://hooks.example.test/in',
    events: ['user.created'],
  });
  webhookId = webhook.body.id;
  expect([product.status, subscription.status, webhook.status]).toEqual([201, 201, 201]);
});
afterAll(() => server?.stop());

interface Sent {
  status: number;
  headers: Headers;
  body: any;
}

/** One raw request: the body is sent exactly as given (a string, bytes), with exactly these headers. */
async function send(
  method: string,
  path: string,
  options: { body?: BodyInit; headers?: Record<string, string>; token?: string | null } = {},
): Promise<Sent> {
  const token = options.token === undefined ? adminToken : options.token;
  const headers: Record<string, string> = {
    accept: 'application/json',
    ...(token ? { authorization: `Bearer ${token}` } : {}),
    ...options.headers,
  };
  const res = await fetch(server.url + path, { method, headers, body: options.body, redirect: 'manual' });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the assertions below say so
  }
  return { status: res.status, headers: res.headers, body };
}

const sendJson = (route: Route, path: string, body: string, headers: Record<string, string> = {}) =>
  send(route.method, path, { body, headers: { 'content-type': 'application/json', ...headers } });

/** A 4xx with the one error body. `label` names the case in a failure message. */
function expectClientError(reply: Sent, label: string, status?: number | number[]) {
  const what = `${label} -> ${reply.status} ${JSON.stringify(reply.body)?.slice(0, 300)}`;
  if (status !== undefined) expect([status].flat(), what).toContain(reply.status);
  expect(reply.status, what).toBeGreaterThanOrEqual(400);
  expect(reply.status, what).toBeLessThan(500);
  expect(reply.headers.get('content-type'), what).toMatch(/^application\/json/);
  expect(typeof reply.body?.error, what).toBe('string');
  expect(typeof reply.body?.error_description, what).toBe('string');
  expect(reply.body.error_description.length, what).toBeGreaterThan(0);
  // Field problems name the REST field, never the operation's variables; nothing internal leaks.
  for (const d of reply.body.details ?? []) {
    expect(typeof d.path === 'string' && typeof d.message === 'string', what).toBe(true);
    expect(d.path, what).not.toMatch(/^input(\.|$)/);
  }
  expect(JSON.stringify(reply.body), what).not.toMatch(/prisma|invocation|node_modules|\/work\/|stack|GraphQL/i);
}

/** Never a 5xx; an error is in the error shape. For inputs some fields legitimately accept (null, booleans). */
function expectNoServerError(reply: Sent, label: string) {
  if (reply.status >= 400) expectClientError(reply, label);
  else expect(reply.status, `${label} -> ${reply.status}`).toBeLessThan(300);
}

/** A path for the route: real identifiers from the fixture where the route is about one of them, else random. */
function realPath(route: Route): string {
  const resource = route.path.split('/')[1]!;
  return (
    route.prefix +
    route.path.replace(/:(\w+)/g, (_, name: string) => {
      if (name === 'id') {
        const ids: Record<string, string> = {
          organizations: tenant.id,
          users: tenant.member.id,
          'api-keys': apiKeyId,
          'oauth-clients': oauthClientId,
          products: productId,
          subscriptions: subscriptionId,
          webhooks: webhookId,
        };
        return ids[resource] ?? randomUUID();
      }
      return (
        ({ user_id: tenant.member.id, invitation_id: invitationId, slug: 'fuzz-target' } as Record<string, string>)[
          name
        ] ?? randomUUID()
      );
    })
  );
}
const pathWith = (route: Route, id: string) => route.prefix + route.path.replace(/:\w+/g, id);

/** The route's body fields, as its unknown-field error lists them. */
async function knownFields(route: Route): Promise<string[]> {
  const reply = await sendJson(route, realPath(route), JSON.stringify({ zz_unknown_field: 1 }));
  const listed = /expected one of: ([^)]*)\)/.exec(reply.body?.details?.[0]?.message ?? '');
  return listed ? listed[1]!.split(', ').filter(Boolean) : [];
}

describe.each(BODY_ROUTES.map((r) => [r.label, r] as const))('%s with a hostile body', (label, route) => {
  it('refuses a body that is not JSON', async () => {
    for (const text of ['{"name":', "{'name': 'x'}", '{"a":1} trailing', 'nul', '\u0000', '{"a":1,}', '{"a": NaN}']) {
      expectClientError(await sendJson(route, realPath(route), text), `${label} ${JSON.stringify(text)}`, 400);
    }
  });

  it('refuses JSON that is not an object', async () => {
    for (const text of ['[]', '[{"name":"x"}]', '"a string"', '42', 'null', 'true']) {
      expectClientError(await sendJson(route, realPath(route), text), `${label} ${text}`, 400);
    }
  });

  it('refuses unknown fields, naming them, and prototype keys', async () => {
    for (const text of ['{"zz_unknown_field": 1}', '{"constructor": {"prototype": {"x": 1}}}', '{"a\\u0000b": 1}']) {
      const reply = await sendJson(route, realPath(route), text);
      expectClientError(reply, `${label} ${text}`, 400);
      expect(reply.body.details?.length, `${label} ${text}`).toBeGreaterThan(0);
    }
    // The JSON parser itself refuses __proto__ keys.
    expectClientError(
      await sendJson(route, realPath(route), '{"__proto__": {"isAdmin": true}}'),
      `${label} __proto__`,
      400,
    );
  });

  it('refuses deeply nested JSON', async () => {
    for (const text of ['{"a":'.repeat(5000) + '1' + '}'.repeat(5000), '['.repeat(20000) + ']'.repeat(20000)]) {
      expectClientError(await sendJson(route, realPath(route), text), `${label} nested`, 400);
    }
  });

  it('refuses a 1 MB body with 413', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
    expectClientError(await sendJson(route, realPath(route), big), `${label} 1 MB`, 413);
  });

  it('refuses a body that is not JSON by content type with 415', async () => {
    const cases: [string, Record<string, string>, BodyInit][] = [
      ['text/plain', { 'content-type': 'text/plain' }, '{"name":"x"}'],
      ['a form', { 'content-type': 'application/x-www-form-urlencoded' }, 'name=x'],
      [
        'multipart',
        { 'content-type': 'multipart/form-data; boundary=x' },
        '--x\r\ncontent-disposition: form-data; name="name"\r\n\r\nx\r\n--x--',
      ],
      ['no content type', {}, new TextEncoder().encode('{"name":"x"}')],
      ['a JSON look-alike', { 'content-type': 'application/vnd.api+json' }, '{"name":"x"}'],
      ['xml', { 'content-type': 'application/xml' }, '<name>x</name>'],
    ];
    for (const [what, headers, body] of cases) {
      expectClientError(await send(route.method, realPath(route), { body, headers }), `${label} ${what}`, 415);
    }
  });

  it('refuses bodies in encodings it does not speak, or that do not decode', async () => {
    const cases: [string, string, BodyInit][] = [
      ['gzip garbage', 'gzip', 'this is not gzip'],
      ['deflate garbage', 'deflate', 'this is not deflate'],
      ['an unknown encoding', 'x-bogus', '{}'],
      ['gzip of invalid JSON', 'gzip', gzipSync('{"name":')],
      ['brotli garbage', 'br', 'this is not brotli'],
      ['brotli of invalid JSON', 'br', brotliCompressSync('{"name":')],
    ];
    for (const [what, encoding, body] of cases) {
      expectClientError(
        await send(route.method, realPath(route), {
          body,
          headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        }),
        `${label} ${what}`,
      );
    }
  });

  it('refuses wrong field types, very long strings, NUL characters and lone surrogates field by field', async () => {
    const fields = await knownFields(route);
    if (!fields.length) {
      // A route that takes no fields (rotate a secret, retry a delivery) refuses any field it is sent.
      expectClientError(
        await sendJson(route, realPath(route), JSON.stringify({ zz_unknown_field: 1 })),
        `${label} an unknown field`,
        400,
      );
      return;
    }
    const refused: [string, unknown][] = [
      ['a number', 12345],
      ['a fraction', 1.5],
      ['an object', { $ne: null }],
      ['an array of mixed types', ['a', 12]],
      ['an array of objects', [{}]],
      ['a very long string', 'x'.repeat(50_000)],
      ['a NUL character', 'a\u0000b'],
      // Sent as "\udfff" in JSON: a JSON column refuses it, a text column would keep U+FFFD instead.
      ['a lone surrogate', 'a\udfffb'],
    ];
    // Some fields take these (null clears a picture, booleans switch things): they must only never break.
    const maybe: [string, unknown][] = [
      ['null', null],
      ['true', true],
      ['false', false],
      ['an empty string', ''],
      ['unicode', 'ünï©ødé 💥 中文'],
    ];
    // Numeric fields (seats, prices) take numbers: for them a number must only never break.
    const numbers = new Set(['a number', 'a fraction']);
    // One field at a time, its values at once (the answers are independent of each other).
    for (const field of fields) {
      const numeric = NUMERIC_FIELDS.includes(field);
      const refusedHere = numeric ? refused.filter(([name]) => !numbers.has(name)) : refused;
      const maybeHere = numeric ? [...maybe, ...refused.filter(([name]) => numbers.has(name))] : maybe;
      const ask = (value: unknown) => sendJson(route, realPath(route), JSON.stringify({ [field]: value }));
      const [refusedReplies, maybeReplies] = await Promise.all([
        Promise.all(refusedHere.map(([, v]) => ask(v))),
        Promise.all(maybeHere.map(([, v]) => ask(v))),
      ]);
      refusedReplies.forEach((reply, i) => expectClientError(reply, `${label} ${field}: ${refusedHere[i]![0]}`));
      maybeReplies.forEach((reply, i) => expectNoServerError(reply, `${label} ${field}: ${maybeHere[i]![0]}`));
    }
  });

  it('answers an empty object without a server error (400 where fields are required)', async () => {
    // A route that names fields refuses {} (a create needs some); one that takes no fields (rotate a secret, retry a
    // delivery) may simply act.
    const fields = route.method === 'POST' ? await knownFields(route) : [];
    const reply = await sendJson(route, realPath(route), '{}');
    if (fields.length && !/^\/oauth-clients\/:id$/.test(route.path))
      expectClientError(reply, `${label} {}`, [400, 404]);
    else expectNoServerError(reply, `${label} {}`);
  });
});

const HOSTILE_IDS: [string, string][] = [
  ['a random string', `nope-${randomBytes(4).toString('hex')}`],
  ['a random uuid', randomUUID()],
  ['SQL', encodeURIComponent("' OR 1=1 --")],
  ['more SQL', encodeURIComponent('1; DROP TABLE users; --')],
  ['a very long id', 'a'.repeat(5000)],
  ['unicode', encodeURIComponent('ünï©ødé-💥-中文')],
  ['a NUL byte', '%00'],
  ['a NUL inside', 'abc%00def'],
  ['control characters', '%01%02%1b'],
  ['broken percent-encoding', '%E0%A4%A'],
  ['an encoded lone surrogate', '%ED%A0%80'],
  ['a JSON operator', encodeURIComponent('{"$ne":null}')],
  ['-1', '-1'],
  ['1e308', '1e308'],
  ['null', 'null'],
  ['__proto__', '__proto__'],
];

describe.each(PARAM_ROUTES.map((r) => [r.label, r] as const))('%s with unknown identifiers', (label, route) => {
  it.each(HOSTILE_IDS)('answers %s with 400 or 404', async (what, id) => {
    const reply = takesBody(route)
      ? await sendJson(route, pathWith(route, id), '{}')
      : await send(route.method, pathWith(route, id));
    expectClientError(reply, `${label} ${what}`, [400, 404]);
  });
});

describe.each(GET_ROUTES.map((r) => [r.label, r] as const))('%s with a hostile query string', (label, route) => {
  it('refuses a parameter given twice', async () => {
    for (const query of ['limit=1&limit=2', 'cursor=a&cursor=b', 'x=1&x=2']) {
      expectClientError(await send('GET', `${realPath(route)}?${query}`), `${label} ?${query}`, 400);
    }
  });

  it('never breaks on odd values', async () => {
    const queries = [
      'limit=-1',
      'limit=abc',
      'limit=%00',
      'cursor=%00',
      'cursor=' + 'a'.repeat(5000),
      `cursor=${encodeURIComponent("' OR 1=1 --")}`,
      'cursor[]=x',
      'organization_id=%00',
      `organization_id=${encodeURIComponent("' OR 1=1 --")}`,
      'organization_id=' + 'a'.repeat(5000),
      'product=%00&feature=%00',
      'id=%00',
      '%00=1',
    ];
    for (const query of queries)
      expectNoServerError(await send('GET', `${realPath(route)}?${query}`), `${label} ?${query}`);
  });
});

describe.each(PAGED_ROUTES.map((r) => [r.label, r] as const))('%s paging', (label, route) => {
  it('refuses limits outside 1..100 and cursors that are not cursors', async () => {
    for (const query of [
      'limit=-1',
      'limit=0',
      'limit=101',
      'limit=abc',
      'limit=1.5',
      'limit=',
      'limit=1e3',
      'limit=99999999999999999999',
      'limit=%00',
      'cursor=' + 'a'.repeat(5000),
      'cursor=garbage',
    ]) {
      expectClientError(await send('GET', `${realPath(route)}?${query}`), `${label} ?${query}`, 400);
    }
    expect((await send('GET', `${realPath(route)}?limit=100`)).status).toBe(200);
  });
});

describe('credentials', () => {
  it.each(PRIVATE_ROUTES.map((r) => [r.label, r] as const))(
    '%s answers 401 without credentials',
    async (label, route) => {
      const reply = takesBody(route)
        ? await send(route.method, realPath(route), {
            token: null,
            body: '{}',
            headers: { 'content-type': 'application/json' },
          })
        : await send(route.method, realPath(route), { token: null });
      expectClientError(reply, label, 401);
      expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer /);
    },
  );

  it('answers 401 to malformed or unknown credentials', async () => {
    const headers: Record<string, string>[] = [
      { authorization: 'Bearer' },
      { authorization: 'Bearer a b' },
      { authorization: 'Basic YWRtaW46YWRtaW4=' },
      { authorization: 'Bearer ' + 'tss_' + 'a'.repeat(8000) },
      { authorization: "Bearer ' OR 1=1 --" },
      { authorization: 'Bearer tsk_unknown', 'x-api-secret': 'tsks_unknown' },
      { authorization: 'Bearer tsk_' + 'a'.repeat(5000), 'x-api-secret': 'tsks_' + 'a'.repeat(5000) },
    ];
    for (const h of headers)
      expectClientError(
        await send('GET', '/api/v1/users/me', { token: null, headers: h }),
        JSON.stringify(h).slice(0, 80),
        401,
      );
  });
});

describe('the session cookie (CSRF)', () => {
  let cookie: string;
  let origin: string;
  beforeAll(async () => {
    const { login } = await signIn(server.url, tenant.admin.email, PASSWORD);
    cookie = `tessera_session=${login.token}`;
    origin = new URL(server.base.settings.issuer()).origin;
  });
  const create = (headers: Record<string, string>) =>
    send('POST', '/api/v1/api-keys', {
      token: null,
      body: JSON.stringify({ name: 'from the browser' }),
      headers: { 'content-type': 'application/json', cookie, ...headers },
    });

  it('authenticates safe requests by the cookie alone', async () => {
    const reply = await send('GET', '/api/v1/users/me', { token: null, headers: { cookie } });
    expect(reply.status).toBe(200);
    expect(reply.body.id).toBe(tenant.admin.id);
  });

  it('refuses a write carried by the cookie without our Origin or Referer', async () => {
    const cases: Record<string, string>[] = [
      {},
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: origin.replace(/:\d+$/, ':1') },
      { origin: 'not a url' },
      { referer: 'https://evil.example/page' },
      { referer: `https://evil.example/?${origin}` },
    ];
    for (const headers of cases) {
      const reply = await create(headers);
      expectClientError(reply, JSON.stringify(headers), 403);
    }
    expect(await server.base.db.apiKey.count({ where: { name: 'from the browser' } })).toBe(0);
    // Nor does a cross-site DELETE end the account.
    expectClientError(
      await send('DELETE', '/api/v1/users/me', { token: null, headers: { cookie, origin: 'https://evil.example' } }),
      'DELETE /users/me',
      403,
    );
    expect(await server.base.db.user.findUnique({ where: { id: tenant.admin.id } })).not.toBeNull();
  });

  it('accepts a write carried by the cookie from our own origin', async () => {
    expect((await create({ origin })).status).toBe(201);
    expect((await create({ referer: `${origin}/admin/settings/api-keys` })).status).toBe(201);
  });
});

describe('paths and methods the tables do not have', () => {
  it.each([
    '/v1',
    '/v1/',
    '/api/v1',
    '/v1/nope',
    '/api/v1/nope',
    '/v1/users/x/y/z',
    '/api/v1/users/me/extra',
    '/api/v1/users',
    '/v1/api-keys',
    '/v1/%00',
    '/api/v1/' + 'a'.repeat(3000),
  ])('%s answers 404 in the error shape', async (path) => {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const reply = await send(
        method,
        path,
        method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {},
      );
      expectClientError(reply, `${method} ${path}`, 404);
    }
  });

  // Rows whose paths differ only in parameter names (/products/:slug, /products/:id) are one path to the router.
  const byPath = new Map<string, Route[]>();
  for (const r of ROUTES) {
    const shape = (r.prefix + r.path).replace(/:\w+/g, ':param');
    byPath.set(shape, [...(byPath.get(shape) ?? []), r]);
  }
  // A literal path that a row with a parameter also matches is that row's too, for its methods: PATCH
  // /api/v1/users/me/passkeys/options renames the passkey "options" (/users/me/passkeys/:id), which is not found.
  const servedByParameter = (path: string, method: string) =>
    !path.includes(':') &&
    ROUTES.some(
      (r) =>
        r.method === method &&
        r.path.includes(':') &&
        new RegExp(`^${(r.prefix + r.path).replace(/:\w+/g, '[^/]+')}$`).test(path),
    );
  it.each([...byPath.entries()])('%s answers 405 to the methods it lacks', async (path, routes) => {
    const concrete = path.replace(/:\w+/g, randomUUID());
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter(
      (m) => !routes.some((r) => r.method === m) && !servedByParameter(path, m),
    )) {
      const reply = await send(
        method,
        concrete,
        method === 'GET' ? {} : { body: '{}', headers: { 'content-type': 'application/json' } },
      );
      expectClientError(reply, `${method} ${path}`, 405);
      const allow = (reply.headers.get('allow') ?? '').split(', ');
      for (const r of routes) expect(allow, `${method} ${path}: Allow`).toContain(r.method);
      expect(allow).not.toContain(method);
    }
  });
});

describe('sign-in with input the database cannot hold', () => {
  it("refuses a lone surrogate in the email with 400, where the failed attempt's audit entry once made it a 500", async () => {
    const reply = await send('POST', '/api/v1/auth/login', {
      body: '{"email":"\\udfff","password":"{{7*7}}"}',
      headers: { 'content-type': 'application/json' },
      token: null,
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(400);
    expect(JSON.stringify(reply.body)).toContain('lone surrogate');
  });
});

describe('the OAuth endpoints with input the database cannot hold', () => {
  const form = (fields: string) => ({
    body: fields,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    token: null,
  });

  it.each(['/oauth/token', '/oauth/revoke', '/oauth/introspect'])(
    '%s refuses a NUL in a parameter with invalid_request',
    async (path) => {
      for (const fields of [
        'grant_type=client_credentials&client_id=a%00&client_secret=x',
        'token=x&client_id=a%00&client_secret=x',
        'token=a%00&client_id=x&client_secret=y',
        '%00=1&client_id=x',
      ]) {
        const reply = await send('POST', path, form(fields));
        expectClientError(reply, `${path} ${fields}`, [400, 401]);
      }
      const reply = await send(
        'POST',
        path,
        form('client_id=a%00&client_secret=x&token=x&grant_type=client_credentials'),
      );
      expect(reply.body).toMatchObject({ error: 'invalid_request' });
      expect(reply.body.error_description).toMatch(/client_id.*NUL/);
      const json = await send('POST', path, {
        body: JSON.stringify({ client_id: 'a\u0000', client_secret: 'x', token: 'x' }),
        headers: { 'content-type': 'application/json' },
        token: null,
      });
      expect(json.status, JSON.stringify(json.body)).toBe(400);
    },
  );

  it('/oauth/authorize shows its error page for a NUL, never a 500', async () => {
    for (const query of [
      'client_id=a%00&response_type=code',
      'client_id=x&redirect_uri=https%3A%2F%2Fa%00&response_type=code',
      'state=%00',
    ]) {
      const reply = await send('GET', `/oauth/authorize?${query}`, { token: null });
      expect(reply.status, query).toBe(400);
      expect(reply.headers.get('content-type'), query).toMatch(/^text\/html/);
    }
  });

  it('/oauth/token refuses a body that does not decode as its Content-Encoding', async () => {
    for (const [encoding, body] of [
      ['br', 'not brotli'],
      ['gzip', 'not gzip'],
      ['deflate', 'not deflate'],
    ] as const) {
      const reply = await send('POST', '/oauth/token', {
        body,
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': encoding },
        token: null,
      });
      expectClientError(reply, `Content-Encoding: ${encoding}`, 400);
    }
  });
});

describe('REST query parameters of the wrong type', () => {
  it.each(PAGED_ROUTES.map((r) => [r.label, r] as const))(
    '%s names ?limit= when it is not a whole number',
    async (label, route) => {
      for (const limit of ['abc', '1.5', '1e3', '', '0x10', '-']) {
        const reply = await send('GET', `${realPath(route)}?limit=${limit}`);
        expectClientError(reply, `${label} ?limit=${limit}`, 400);
        expect(reply.body.details, `${label} ?limit=${limit}`).toEqual([
          { path: 'limit', message: 'must be a whole number' },
        ]);
      }
    },
  );
});

describe('OAuth client URLs are stored as a browser reads them', () => {
  const register = (fields: Record<string, unknown>) =>
    send('POST', '/api/v1/oauth-clients', {
      body: JSON.stringify({ name: 'url check', allowed_scopes: ['openid'], organization_id: tenant.id, ...fields }),
      headers: { 'content-type': 'application/json' },
    });

  it('refuses redirect URIs with control characters, spaces, fragments or a spelling the URL parser changes', async () => {
    const refused = [
      'https://app.example/cb\nx',
      'https://app.example/cb\rx',
      'https://app.example/c\tb',
      'https://app.example/cb\u0000',
      'https://app.example/c\u007fb',
      ' https://app.example/cb',
      'https://app.example/cb ',
      'https://app.example/c b',
      'https://app.example/cb#',
      'https://app.example/cb#frag',
      'https://APP.example/cb',
      'https://app.example',
      'https://app.example/a/../cb',
      'https://app.example:443/cb',
      'https://app.example/\u00e9',
      'https:app.example/cb',
      'https://app.example\\cb',
    ];
    for (const uri of refused) {
      const reply = await register({ redirect_uris: [uri] });
      expectClientError(reply, JSON.stringify(uri), 400);
      expect(reply.body.details?.[0]?.path, JSON.stringify(uri)).toBe('redirect_uris.0');
    }
    const spelled = await register({ redirect_uris: ['https://app.example'] });
    expect(spelled.body.details[0].message).toBe('must be written as https://app.example/');
    expect(await server.base.db.oAuthClient.count({ where: { name: 'url check' } })).toBe(0);
  });

  it('refuses the same in post-logout redirect URIs and allowed origins, and in an update', async () => {
    const first = await register({ redirect_uris: ['https://app.example/cb'] });
    expect(first.status).toBe(201);
    for (const body of [
      { post_logout_redirect_uris: ['https://app.example/bye\nx'] },
      { allowed_origins: ['https://app.example\n'] },
      { allowed_origins: ['https://app.\texample'] },
      { allowed_origins: [' https://app.example'] },
    ]) {
      expectClientError(
        await register({ redirect_uris: ['https://app.example/cb'], ...body }),
        JSON.stringify(body),
        400,
      );
      expectClientError(
        await send('PATCH', `/api/v1/oauth-clients/${first.body.id}`, {
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        }),
        `PATCH ${JSON.stringify(body)}`,
        400,
      );
    }
    const stored = await server.base.db.oAuthClient.findUniqueOrThrow({ where: { id: first.body.id } });
    expect(stored.postLogoutRedirectUris).toEqual([]);
    expect(stored.allowedOrigins).toEqual([]);
  });

  it('still takes canonical https, loopback http and native-app URIs', async () => {
    const reply = await register({
      redirect_uris: [
        'https://app.example/cb?x=1',
        'http://127.0.0.1:8080/cb',
        'http://localhost/cb',
        'com.example.app:/oauth',
      ],
      allowed_origins: ['https://app.example'],
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  });
});

describe('a record deleted while other requests are about it', () => {
  it('answers those requests 404, never 500', async () => {
    // Each request reads the client, then writes it: a delete landing in between leaves the write nothing to
    // write (Prisma P2025). Several rounds, since which request wins is up to the scheduler.
    const statuses: number[] = [];
    for (let round = 0; round < 12; round++) {
      const created = await send('POST', '/api/v1/oauth-clients', {
        body: JSON.stringify({ name: 'raced', redirect_uris: ['https://app.example/cb'], allowed_scopes: ['openid'] }),
        headers: { 'content-type': 'application/json' },
      });
      expect(created.status).toBe(201);
      const path = `/api/v1/oauth-clients/${created.body.id}`;
      const replies = await Promise.all([
        send('DELETE', path),
        send('POST', `${path}/rotate-secret`),
        send('PATCH', path, {
          body: JSON.stringify({ name: 'renamed' }),
          headers: { 'content-type': 'application/json' },
        }),
        send('DELETE', path),
      ]);
      for (const reply of replies) if (reply.status >= 400) expectClientError(reply, `round ${round}`, 404);
      statuses.push(...replies.map((r) => r.status));
    }
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
  });
});
