// A seeded fuzzer: a few thousand hostile requests against every operation in openapi.json (a route added to the
// document is covered without touching this file), /graphql, and every form action of the portal. Whatever is
// sent, the answer is never a 5xx, and what the client got wrong is not logged at error level. The seed is
// printed; FUZZ_SEED=<seed> replays a run, FUZZ_REQUESTS=<n> changes its length.
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { documentedOperations, resolveRef } from '../helpers/openapi.ts';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn } from '../helpers/http.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { registerClient, type RegisteredClient } from '../helpers/oauth.ts';

const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 3000);
const CONCURRENCY = 8;

/** mulberry32: small, fast, and the same sequence for the same seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, chance: (p: number) => next() < p, pick: <T>(list: readonly T[]): T => list[int(list.length)]! };
}
type Rng = ReturnType<typeof prng>;

// ---- what the fuzzer aims at ---------------------------------------------------------------------------------

interface Target {
  method: string;
  /** A template: {name} is a path parameter. */
  path: string;
  kind: 'rest' | 'oauth' | 'graphql' | 'portal';
  fields: string[];
  query: string[];
  /** Ends the caller's session or account: sent without real credentials, so the run keeps its identities. */
  ends?: boolean;
}

const schemaFields = (schema: unknown): string[] => Object.keys(resolveRef<{ properties?: object }>(schema ?? {})?.properties ?? {});

const OPENAPI_TARGETS: Target[] = documentedOperations().map((op) => {
  const body = op.operation.requestBody ? resolveRef<{ content?: Record<string, { schema?: unknown }> }>(op.operation.requestBody) : undefined;
  const fields = [...new Set(Object.values(body?.content ?? {}).flatMap((media) => schemaFields(media.schema)))];
  const query = [...(op.pathItem.parameters ?? []), ...(op.operation.parameters ?? [])].map((p: unknown) => resolveRef<{ name: string; in: string }>(p)).filter((p) => p.in === 'query').map((p) => p.name);
  const ends = /\/(auth\/logout|oauth\/logout)$/.test(op.path) || (op.method === 'DELETE' && op.path === '/api/v1/users/me');
  return { method: op.method, path: op.path, kind: op.path.startsWith('/oauth/') ? 'oauth' : 'rest', fields, query, ends };
});

/** The portal's form actions, read from its routes: a new page with actions is fuzzed without touching this file. */
function portalTargets(): Target[] {
  const root = path.resolve(import.meta.dirname, '../../portal/src/routes');
  const targets: Target[] = [];
  for (const file of readdirSync(root, { recursive: true }) as string[]) {
    if (!file.endsWith('+page.server.ts')) continue;
    const source = readFileSync(path.join(root, file), 'utf8');
    const route = '/' + path.dirname(file).split(path.sep).filter((s) => s !== '.').map((s) => s.replace(/^\[(\w+)\]$/, '{$1}')).join('/');
    targets.push({ method: 'GET', path: route, kind: 'portal', fields: [], query: ['return_to', 'request', 'cursor', 'login_hint', 'token', 'deleted'] });
    const block = /export const actions[^{]*\{([\s\S]*)\n\};/.exec(source)?.[1] ?? '';
    for (const [, name] of block.matchAll(/^\t(\w+): async/gm)) {
      const fields = [...new Set([...source.matchAll(/form\.(?:get|getAll|has)\('(\w+)'\)/g)].map((m) => m[1]!))];
      targets.push({ method: 'POST', path: name === 'default' ? route : `${route}?/${name}`, kind: 'portal', fields, query: [], ends: route === '/logout' });
    }
  }
  return targets;
}

const GRAPHQL_TARGETS: Target[] = ['GET', 'POST'].map((method) => ({ method, path: '/graphql', kind: 'graphql' as const, fields: ['query', 'variables', 'operationName', 'extensions'], query: [] }));

// ---- hostile values --------------------------------------------------------------------------------------------

const nested = (depth: number, leaf: unknown = 1): unknown => {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};

function value(rng: Rng, depth = 0): unknown {
  switch (rng.int(22)) {
    case 0: return rng.pick(['', ' ', 'x', 'admin', 'owner', 'member', 'openid', 'RS256', 'true', 'null', 'undefined']);
    case 1: return 'a\u0000b';
    case 2: return 'x'.repeat(rng.pick([256, 3000, 70_000]));
    case 3: return rng.pick([0, -1, 1, 42, 2 ** 31, 2 ** 53 + 1, 1e308, -1e308, 0.5]);
    case 4: return rng.chance(0.5);
    case 5: return null;
    case 6: return [];
    case 7: return depth < 3 ? [value(rng, depth + 1), value(rng, depth + 1)] : ['x'];
    case 8: return {};
    case 9: return { $ne: null };
    case 10: return nested(rng.pick([40, 200]));
    case 11: return rng.pick(['ünï©ødé', '💥', '\ud800', '\udfff', '\u202e', '中文', '\ufeff']);
    case 12: return rng.pick(["' OR 1=1 --", '1; DROP TABLE users; --', '${jndi:x}', '{{7*7}}', '<script>alert(1)</script>']);
    case 13: return rng.pick(['https://app.example/cb\nx', 'https://app.example/cb#f', 'javascript:alert(1)', '//evil.example', 'http://127.0.0.1/cb', ' https://a.example/']);
    case 14: return rng.pick(['a@b.c', 'A@B.C ', 'a\u0000@b.c', '@', 'a'.repeat(300) + '@b.c']);
    case 15: return rng.pick(['2024-01-01T00:00:00Z', '2024-13-45', 'yesterday', '9999-12-31T23:59:59Z', '0000-01-01']);
    case 16: return JSON.parse('{"__proto__": {"isAdmin": true}}');
    case 17: return { constructor: { prototype: { isAdmin: true } } };
    case 18: return rng.pick(['monthly', 'yearly', 'active', 'trial', 'cancelled', 'expired', 'weekly']);
    case 19: return depth < 3 ? Object.fromEntries([[rng.pick(['name', 'a\u0000', '__proto__', 'x']), value(rng, depth + 1)]]) : {};
    case 20: return rng.pick(['authorization_code', 'refresh_token', 'client_credentials', 'password', 'code', 'token']);
    default: return `r${rng.int(1e9)}`;
  }
}

/** encodeURIComponent, which refuses a lone surrogate: that goes out as U+FFFD (wireValue sends the raw bytes). */
const enc = (text: string) => encodeURIComponent(text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));

/** Query and form values as the wire carries them: sometimes raw percent sequences that do not decode. */
const wireValue = (rng: Rng) =>
  rng.chance(0.3) ? rng.pick(['%00', '%ff', '%E0%A4%A', '%ED%A0%80', '%', '%%', '%2e%2e%2f', 'a%00b', '%0d%0aX-Injected:1', '']) : enc(String(value(rng)));

const INVALID_JSON = ['{"name":', "{'name': 'x'}", '{"a":1} trailing', 'nul', '{"a":1,}', '{"a": NaN}', '[1,]', '{"a":"\\x"}', '\u0000', '{"a":"\ud800"}', '"'];

/** Bytes that are not UTF-8, inside an otherwise plausible JSON or form body. */
const INVALID_UTF8 = [[0xff, 0xfe], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80]];
const withBadBytes = (rng: Rng, text: string) => {
  const cut = rng.int(text.length + 1);
  return Buffer.concat([Buffer.from(text.slice(0, cut)), Buffer.from(rng.pick(INVALID_UTF8)), Buffer.from(text.slice(cut))]);
};

// ---- building a request --------------------------------------------------------------------------------------

interface Identities {
  tenant: Tenant;
  adminToken: string;
  apiKey: { key: string; secret: string };
  client: RegisteredClient;
  cookie: string;
  origin: string;
}

interface Fuzzed {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  chunked: boolean;
}

function pathFor(rng: Rng, target: Target, ids: Identities): string {
  return target.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (rng.chance(0.45)) {
      const real: Record<string, string> = { id: target.path.includes('organizations') ? ids.tenant.id : target.path.includes('oauth-clients') ? ids.client.id : ids.tenant.member.id, user_id: ids.tenant.member.id, slug: 'no-such-product' };
      if (real[name]) return real[name]!;
    }
    return rng.pick(['%00', 'a%00b', '..', '%2e%2e', 'x'.repeat(3000), '%E0%A4%A', '%ED%A0%80', '__proto__', '-1', 'null', encodeURIComponent("' OR 1=1 --"), `00000000-0000-4000-8000-${String(rng.int(1e12)).padStart(12, '0')}`, `r${rng.int(1e6)}`]);
  });
}

function fields(rng: Rng, target: Target, ids: Identities): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of target.fields) {
    if (!rng.chance(0.6)) continue;
    // Real OAuth client credentials now and then, so that requests get past client authentication.
    if (field === 'client_id' && rng.chance(0.5)) out[field] = ids.client.client_id;
    else if (field === 'client_secret' && rng.chance(0.5)) out[field] = ids.client.client_secret;
    else out[field] = value(rng);
  }
  if (rng.chance(0.15)) out[rng.pick(['zz_unknown', '__proto__', 'constructor', 'a\u0000b'])] = value(rng);
  return out;
}

const form = (rng: Rng, values: Record<string, unknown>) =>
  Object.entries(values).map(([k, v]) => `${enc(k)}=${rng.chance(0.2) ? wireValue(rng) : enc(typeof v === 'string' ? v : JSON.stringify(v) ?? '')}`).join('&');

function graphqlBody(rng: Rng): unknown {
  const documents = [
    '{ __typename }', '{ viewer { user { email } platformAdmin } }', 'query($l: Int, $c: String) { users(limit: $l, cursor: $c) { items { id } nextCursor } }',
    'mutation($i: CreateOrganizationInput!) { createOrganization(input: $i) { __typename } }', 'query($id: ID!) { oauthClient(id: $id) { id } }',
    '{', 'query { nope }', `{ ${'a: __typename '.repeat(30)} }`, `{ ${'viewer { '.repeat(15)}${'}'.repeat(15)} }`, 'subscription { x }', 'mutation { __typename }',
  ];
  const body: Record<string, unknown> = { query: rng.chance(0.9) ? rng.pick(documents) : value(rng) };
  if (rng.chance(0.7)) body.variables = rng.chance(0.7) ? { l: value(rng), c: value(rng), i: value(rng), id: value(rng) } : value(rng);
  if (rng.chance(0.1)) body.operationName = value(rng);
  if (rng.chance(0.1)) body.extensions = value(rng);
  return rng.chance(0.05) ? [body, body] : body;
}

const CONTENT_TYPES = ['text/plain', 'application/xml', 'multipart/form-data', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/json; charset=latin1', 'application/merge-patch+json', 'application/graphql', 'application/x-www-form-urlencoded; charset=utf-7', '', 'foo', 'application/x-sveltekit-formdata'];

function build(rng: Rng, target: Target, ids: Identities): Fuzzed {
  const headers: Record<string, string> = { accept: rng.pick(['application/json', 'text/html', '*/*', 'application/graphql-response+json']) };
  let url = pathFor(rng, target, ids);

  // Credentials: none, garbage, or one of the run's identities (never for a request that would end it).
  const who = target.ends ? rng.pick(['none', 'garbage']) : rng.pick(['none', 'garbage', 'admin', 'admin', 'member', 'apiKey', 'cookie']);
  if (who === 'garbage') headers.authorization = rng.pick(['Bearer', 'Bearer a b', 'Basic YWRtaW46YWRtaW4=', `Bearer tss_${'a'.repeat(5000)}`, 'Bearer %00', 'Bearer eyJhbGciOiJub25lIn0.e30.']);
  if (who === 'admin') headers.authorization = `Bearer ${ids.adminToken}`;
  if (who === 'member') headers.authorization = `Bearer ${ids.tenant.member.token}`;
  if (who === 'apiKey') Object.assign(headers, { authorization: `Bearer ${ids.apiKey.key}`, 'x-api-secret': ids.apiKey.secret });
  if (who === 'cookie' || (target.kind === 'portal' && !target.ends && rng.chance(0.7))) headers.cookie = ids.cookie;
  // Same-origin writes (CSRF checks pass), so the fuzzing reaches the handlers.
  if (target.method !== 'GET' && rng.chance(0.8)) headers.origin = ids.origin;

  const query = [...target.query, ...(rng.chance(0.2) ? ['limit', 'cursor', 'x', '__proto__', '%00'] : [])].filter(() => rng.chance(0.5));
  if (query.length) url += (url.includes('?') ? '&' : '?') + query.map((name) => `${name}=${wireValue(rng)}`).join('&');
  if (rng.chance(0.05)) url += `${url.includes('?') ? '&' : '?'}limit=1&limit=2`;

  let body: Buffer | undefined;
  if (target.method !== 'GET' && rng.chance(0.95)) {
    const values = target.kind === 'graphql' ? graphqlBody(rng) : fields(rng, target, ids);
    const formLike = target.kind === 'portal' || (target.kind === 'oauth' && rng.chance(0.6));
    let text: string;
    let type: string;
    switch (rng.int(10)) {
      case 0: text = rng.pick(INVALID_JSON); type = 'application/json'; break;
      case 1: text = rng.pick(['[]', '"s"', '42', 'null', 'true', '[{"a":1}]']); type = 'application/json'; break;
      case 2: text = rng.chance(0.5) ? '{"a":'.repeat(3000) + '1' + '}'.repeat(3000) : '['.repeat(10000) + ']'.repeat(10000); type = 'application/json'; break;
      case 3: text = JSON.stringify({ ...(values as object), pad: 'x'.repeat(rng.chance(0.2) ? 1_100_000 : 70_000) }); type = 'application/json'; break;
      default:
        text = formLike && !Array.isArray(values) ? form(rng, values as Record<string, unknown>) : JSON.stringify(values);
        type = formLike ? 'application/x-www-form-urlencoded' : 'application/json';
    }
    if (target.kind === 'graphql' && rng.chance(0.1)) [text, type] = [String((values as { query?: unknown }).query), 'application/graphql'];
    if (rng.chance(0.2)) type = rng.pick(CONTENT_TYPES);
    if (type) headers['content-type'] = type;
    body = rng.chance(0.1) ? withBadBytes(rng, text) : Buffer.from(text);
    if (rng.chance(0.15)) {
      const encoding = rng.pick(['gzip', 'gzip', 'br', 'br', 'deflate', 'x-bogus', 'gzip, br', 'identity', 'zstd']);
      headers['content-encoding'] = encoding;
      if (rng.chance(0.5)) body = encoding === 'br' ? brotliCompressSync(body) : encoding.startsWith('gzip') ? gzipSync(body) : body;
      else body = Buffer.from(rng.pick(['not compressed at all', '\u0000\u0001\u0002', '']));
    }
  } else if (target.kind === 'graphql') {
    const { query, variables } = graphqlBody(rng) as { query?: unknown; variables?: unknown };
    url += `?query=${enc(String(query))}`;
    if (variables !== undefined) url += `&variables=${rng.chance(0.3) ? wireValue(rng) : enc(rng.chance(0.7) ? JSON.stringify(variables) : String(variables))}`;
  }
  return { method: rng.chance(0.03) ? rng.pick(['PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']) : target.method, path: url, headers, body, chunked: !!body && rng.chance(0.2) };
}

/**
 * One request over its own connection (no keep-alive: a connection the server closes after refusing a body must
 * not fail the next request), with exactly these headers and bytes; a chunked body goes out in 4 KB pieces.
 */
function send(r: Fuzzed, body: Buffer | undefined): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(server.url);
    const headers: Record<string, string> = { ...r.headers, connection: 'close' };
    if (body && !r.chunked) headers['content-length'] = String(body.length);
    const req = http.request({ host: url.hostname, port: url.port, method: r.method, path: r.path, headers, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', (error: NodeJS.ErrnoException) => {
      // The server may answer (413, 415) and close before the whole body is written: that answer is what counts.
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    if (body && r.chunked) for (let i = 0; i < body.length; i += 4096) req.write(body.subarray(i, i + 4096));
    req.end(body && !r.chunked ? body : undefined);
  });
}

// ---- the run -------------------------------------------------------------------------------------------------------

let server: TestServer;
let ids: Identities;
const errorLogs: unknown[] = [];

beforeAll(async () => {
  console.info(`fuzz seed ${SEED}, ${REQUESTS} requests (replay with FUZZ_SEED=${SEED})`);
  const logger = pino({ level: 'warn' }, { write: (line: string) => void (JSON.parse(line).level >= 50 && errorLogs.push(JSON.parse(line))) });
  server = await startTestServer({ logger });
  const admin = await signIn(server.url, ADMIN.email, ADMIN.password);
  const tenant = await createTenant(server.url, admin.api);
  const key = await tenant.owner.api.post('/api/v1/api-keys', { name: 'fuzz' });
  const client = await registerClient(admin.api, { name: 'fuzz', organization_id: tenant.id, redirect_uris: ['https://app.example.test/cb'], allowed_scopes: ['openid', 'offline_access'], grant_types: ['authorization_code', 'refresh_token', 'client_credentials'] });
  const portal = await signIn(server.url, tenant.owner.email, 'a long enough password');
  ids = { tenant, adminToken: admin.login.token, apiKey: { key: key.body.key, secret: key.body.secret }, client, cookie: `tessera_session=${portal.login.token}`, origin: new URL(server.url).origin };
}, 60_000);
afterAll(() => server?.stop());

it(`answers ${REQUESTS} hostile requests without a 5xx and logs none of them as an error`, async () => {
  const rng = prng(SEED);
  const targets = [...OPENAPI_TARGETS, ...GRAPHQL_TARGETS, ...portalTargets()];
  expect(targets.filter((t) => t.kind === 'portal' && t.method === 'POST').length).toBeGreaterThan(3);
  const requests = Array.from({ length: REQUESTS }, () => build(rng, rng.pick(targets), ids));
  const consoleErrors = vi.spyOn(console, 'error').mockImplementation(() => {});
  const failures: string[] = [];
  const slowest = new Map<string, number>();
  const statuses = new Map<number, number>();

  const sendOne = async (r: Fuzzed, index: number) => {
    const body = r.body && r.method !== 'GET' && r.method !== 'HEAD' ? r.body : undefined;
    const label = `#${index} ${r.method} ${r.path.slice(0, 200)} ${JSON.stringify(r.headers).slice(0, 300)} body=${JSON.stringify(body?.subarray(0, 200).toString('latin1') ?? null)}${r.chunked ? ' (chunked)' : ''}`;
    const started = performance.now();
    try {
      const { status, text } = await send(r, body);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status >= 500) failures.push(`${label} -> ${status} ${text.slice(0, 300)}`);
    } catch (error) {
      failures.push(`${label} -> no answer: ${(error as Error).message}`);
    }
    const key = `${r.method} ${r.path.split('?')[0]!.replace(/\/[^/]*%[^/]*|\/r\d+|\/[0-9a-f-]{36}/g, '/:x')}`;
    slowest.set(key, Math.max(slowest.get(key) ?? 0, performance.now() - started));
  };

  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < requests.length) {
      const index = next++;
      await sendOne(requests[index]!, index);
    }
  }));
  if (process.env.FUZZ_VERBOSE) console.info([...statuses].sort(), [...slowest].sort((a, b) => b[1] - a[1]).slice(0, 10));
  // The portal's errors, with their stacks: a 5xx of a portal page is explained there, not in the service's log.
  const portalErrors = consoleErrors.mock.calls.map((c) => (c[0] instanceof Error ? c[0].stack ?? String(c[0]) : String(c[0])).slice(0, 1500));
  consoleErrors.mockRestore();

  // The error log says why a 5xx happened: shown with the failures.
  const logged = errorLogs.map((line) => JSON.stringify(line).slice(0, 1500));
  expect({ failures, logged, portalErrors }, `seed ${SEED}: ${failures.length} answers of 5xx, ${logged.length} error-level log lines, ${portalErrors.length} portal errors`)
    .toEqual({ failures: [], logged: [], portalErrors: [] });
}, 120_000);
