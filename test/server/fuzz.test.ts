// A seeded fuzzer: a few thousand hostile requests against every operation in openapi.json (a route added to the
// document is covered without touching this file; the SCIM endpoints with a directory token too), /graphql, and every
// form action of the portal. Whatever is sent, the answer is never a 5xx, and what the client got wrong is not logged
// at error level. The seed is printed; FUZZ_SEED=<seed> replays a run, FUZZ_REQUESTS=<n> changes its length.
// Then every documented route, every mutation and every query (each field it may read) called with an OAuth access
// token (none answers with a credential; a route is refused first_party_only exactly when the mutation it runs is,
// and /scim/v2 with 401: it is no directory token), and webhook receivers that answer what no receiver should: NUL
// bytes, invalid UTF-8, 300 MB, a slow drip.
import { readdirSync, readFileSync } from 'node:fs';
import http, { type ServerResponse } from 'node:http';
import path from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import {
  getNamedType,
  isCompositeType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  print,
  type GraphQLInputType,
  type GraphQLOutputType,
} from 'graphql';
import { schema } from '../../schema/index.ts';
import { documentedOperations, resolveRef } from '../helpers/openapi.ts';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { MINUTE, movableClock } from '../helpers/clock.ts';
import { waitFor } from '../helpers/wait.ts';
import { sweepDueDeliveries } from '../../schema/modules/webhooks/delivery.service.ts';
import { systemResolver } from '../../schema/push/destination.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { accessTokenOf, registerClient, type RegisteredClient } from '../helpers/oauth.ts';
import { apiV1Routes } from '../../server/rest/api-v1.ts';
import { oauthClientRoutes } from '../../server/rest/oauth-clients.ts';
import { v1Routes } from '../../server/rest/v1.ts';

const APP_REDIRECT = 'https://app.example.test/cb';
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 3000);
const CONCURRENCY = 8;
const QUERY_SWEEP_HOOK = 'query-sweep.example.test';

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
  kind: 'rest' | 'oauth' | 'scim' | 'graphql' | 'portal';
  fields: string[];
  query: string[];
  /** Ends the caller's session or account: sent without real credentials, so the run keeps its identities. */
  ends?: boolean;
}

const schemaFields = (schema: unknown): string[] =>
  Object.keys(resolveRef<{ properties?: object }>(schema ?? {})?.properties ?? {});

const OPENAPI_TARGETS: Target[] = documentedOperations().map((op) => {
  const body = op.operation.requestBody
    ? resolveRef<{ content?: Record<string, { schema?: unknown }> }>(op.operation.requestBody)
    : undefined;
  const fields = [...new Set(Object.values(body?.content ?? {}).flatMap((media) => schemaFields(media.schema)))];
  const query = [...(op.pathItem.parameters ?? []), ...(op.operation.parameters ?? [])]
    .map((p: unknown) => resolveRef<{ name: string; in: string }>(p))
    .filter((p) => p.in === 'query')
    .map((p) => p.name);
  const ends =
    /\/(auth\/logout|oauth\/logout)$/.test(op.path) || (op.method === 'DELETE' && op.path === '/api/v1/users/me');
  return {
    method: op.method,
    path: op.path,
    kind: op.path.startsWith('/oauth/') ? 'oauth' : op.path.startsWith('/scim/') ? 'scim' : 'rest',
    fields,
    query,
    ends,
  };
});

/** The portal's form actions, read from its routes: a new page with actions is fuzzed without touching this file. */
function portalTargets(): Target[] {
  const root = path.resolve(import.meta.dirname, '../../portal/src/routes');
  const targets: Target[] = [];
  for (const file of readdirSync(root, { recursive: true }) as string[]) {
    if (!file.endsWith('+page.server.ts')) continue;
    const source = readFileSync(path.join(root, file), 'utf8');
    const route =
      '/' +
      path
        .dirname(file)
        .split(path.sep)
        .filter((s) => s !== '.')
        .map((s) => s.replace(/^\[(\w+)\]$/, '{$1}'))
        .join('/');
    targets.push({
      method: 'GET',
      path: route,
      kind: 'portal',
      fields: [],
      query: ['return_to', 'request', 'cursor', 'login_hint', 'token', 'deleted'],
    });
    const block = /export const actions[^{]*\{([\s\S]*)\n\};/.exec(source)?.[1] ?? '';
    for (const [, name] of block.matchAll(/^\t(\w+): async/gm)) {
      const fields = [...new Set([...source.matchAll(/form\.(?:get|getAll|has)\('(\w+)'\)/g)].map((m) => m[1]!))];
      targets.push({
        method: 'POST',
        path: name === 'default' ? route : `${route}?/${name}`,
        kind: 'portal',
        fields,
        query: [],
        ends: route === '/logout',
      });
    }
  }
  return targets;
}

const GRAPHQL_TARGETS: Target[] = ['GET', 'POST'].map((method) => ({
  method,
  path: '/graphql',
  kind: 'graphql' as const,
  fields: ['query', 'variables', 'operationName', 'extensions'],
  query: [],
}));

// ---- hostile values --------------------------------------------------------------------------------------------

const nested = (depth: number, leaf: unknown = 1): unknown => {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
};

function value(rng: Rng, depth = 0): unknown {
  switch (rng.int(22)) {
    case 0:
      return rng.pick(['', ' ', 'x', 'admin', 'owner', 'member', 'openid', 'RS256', 'true', 'null', 'undefined']);
    case 1:
      return 'a\u0000b';
    case 2:
      return 'x'.repeat(rng.pick([256, 3000, 70_000]));
    case 3:
      return rng.pick([0, -1, 1, 42, 2 ** 31, 2 ** 53 + 1, 1e308, -1e308, 0.5]);
    case 4:
      return rng.chance(0.5);
    case 5:
      return null;
    case 6:
      return [];
    case 7:
      return depth < 3 ? [value(rng, depth + 1), value(rng, depth + 1)] : ['x'];
    case 8:
      return {};
    case 9:
      return { $ne: null };
    case 10:
      return nested(rng.pick([40, 200]));
    case 11:
      return rng.pick(['ünï©ødé', '💥', '\ud800', '\udfff', '\u202e', '中文', '\ufeff']);
    case 12:
      return rng.pick(["' OR 1=1 --", '1; DROP TABLE users; --', '${jndi:x}', '{{7*7}}', '<script>alert(1)</script>']);
    case 13:
      return rng.pick([
        'https://app.example/cb\nx',
        'https://app.example/cb#f',
        'javascript:alert(1)',
        '//evil.example',
        'http://127.0.0.1/cb',
        ' https://a.example/',
      ]);
    case 14:
      return rng.pick(['a@b.c', 'A@B.C ', 'a\u0000@b.c', '@', 'a'.repeat(300) + '@b.c']);
    case 15:
      return rng.pick(['2024-01-01T00:00:00Z', '2024-13-45', 'yesterday', '9999-12-31T23:59:59Z', '0000-01-01']);
    case 16:
      return JSON.parse('{"__proto__": {"isAdmin": true}}');
    case 17:
      return { constructor: { prototype: { isAdmin: true } } };
    case 18:
      return rng.pick(['monthly', 'yearly', 'active', 'trial', 'cancelled', 'expired', 'weekly']);
    case 19:
      return depth < 3
        ? Object.fromEntries([[rng.pick(['name', 'a\u0000', '__proto__', 'x']), value(rng, depth + 1)]])
        : {};
    case 20:
      return rng.pick(['authorization_code', 'refresh_token', 'client_credentials', 'password', 'code', 'token']);
    default:
      return `r${rng.int(1e9)}`;
  }
}

/** encodeURIComponent, which refuses a lone surrogate: that goes out as U+FFFD (wireValue sends the raw bytes). */
const enc = (text: string) =>
  encodeURIComponent(text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));

/** Query and form values as the wire carries them: sometimes raw percent sequences that do not decode. */
const wireValue = (rng: Rng) =>
  rng.chance(0.3)
    ? rng.pick(['%00', '%ff', '%E0%A4%A', '%ED%A0%80', '%', '%%', '%2e%2e%2f', 'a%00b', '%0d%0aX-Injected:1', ''])
    : enc(String(value(rng)));

const INVALID_JSON = [
  '{"name":',
  "{'name': 'x'}",
  '{"a":1} trailing',
  'nul',
  '{"a":1,}',
  '{"a": NaN}',
  '[1,]',
  '{"a":"\\x"}',
  '\u0000',
  '{"a":"\ud800"}',
  '"',
];

/** Bytes that are not UTF-8, inside an otherwise plausible JSON or form body. */
const INVALID_UTF8 = [[0xff, 0xfe], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80]];
const withBadBytes = (rng: Rng, text: string) => {
  const cut = rng.int(text.length + 1);
  return Buffer.concat([
    Buffer.from(text.slice(0, cut)),
    Buffer.from(rng.pick(INVALID_UTF8)),
    Buffer.from(text.slice(cut)),
  ]);
};

const SCIM_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const SCIM_SCHEMAS = [
  SCIM_USER,
  'urn:ietf:params:scim:schemas:core:2.0:Group',
  'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  'urn:ietf:params:scim:api:messages:2.0:SearchRequest',
];
/** Filters and PATCH paths (RFC 7644 3.4.2.2, 3.5.2) that parse, or nearly: past the first checks into the filter and patch code. */
const SCIM_FILTERS = [
  'userName eq "a@b.c"',
  'emails[type eq "work"].value co "%"',
  'members[value eq "x"]',
  'not (active eq true) or displayName pr',
  'externalId ne null',
  `${'('.repeat(25)}id eq "x"${')'.repeat(25)}`,
  'meta.created gt "yesterday"',
  'meta.lastModified ge "2024-01-01T00:00:00Z"',
  'userName eq "a\u0000"',
  'name.givenName sw "_"',
  '__proto__.x eq 1',
  'userName eq 1e400',
  'displayName co "\ud800"',
  `userName eq "${'x'.repeat(2100)}"`,
  'active eq "True"',
  'userName',
];
const SCIM_PATHS = [
  'displayName',
  'name.givenName',
  'active',
  'emails[type eq "work"].value',
  'emails[primary eq true]',
  'members',
  'members[value eq "x"]',
  'groups',
  'userName',
  'externalId',
  '__proto__.polluted',
  'constructor.prototype.x',
  'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department',
  `${SCIM_USER}:name.familyName`,
  ' ',
  'title',
];
const SCIM_ATTRIBUTES = [
  'userName',
  'members',
  'emails.value',
  'meta.location',
  'name.givenName,__proto__',
  `${SCIM_USER}:displayName`,
  'groups.$ref',
  'id,schemas',
  '',
];
/** The list and projection parameters of a directory's query, or nearly. */
const scimQuery = (rng: Rng, name: string): string | undefined => {
  if (name === 'filter') return rng.pick(SCIM_FILTERS);
  if (name === 'startIndex' || name === 'count')
    return rng.pick(['1', '0', '-5', '2', '1000000', '99999999999999999999', ' 3 ', '1.5']);
  if (name === 'attributes' || name === 'excludedAttributes') return rng.pick(SCIM_ATTRIBUTES);
  return undefined;
};

/**
 * A value for a field of a SCIM body, mostly one a directory would send, so that requests get past the first check into
 * the services; undefined for a field SCIM does not have. A Tessera user's id is no directory user's: a refused member.
 */
function scimValue(rng: Rng, field: string, ids: Identities): unknown {
  /** Three times in four what a directory sends, else anything. */
  const mostly = (...plausible: unknown[]) => (rng.chance(0.75) ? rng.pick(plausible) : value(rng));
  const someone = () =>
    mostly(
      `fuzz${rng.int(1e6)}@example.test`,
      `FUZZ${rng.int(1e6)}@Example.Test`,
      `fuzz_${rng.int(1e6)}%@example.test`,
    );
  switch (field) {
    case 'schemas':
      return rng.chance(0.8) ? SCIM_SCHEMAS : [rng.pick(SCIM_SCHEMAS)];
    case 'Operations':
      return Array.from({ length: 1 + rng.int(3) }, () => {
        const operation: Record<string, unknown> = { op: mostly('add', 'Replace', 'remove', 'REMOVE', 'move') };
        if (rng.chance(0.8)) operation.path = rng.pick(SCIM_PATHS);
        if (rng.chance(0.8))
          operation.value = mostly(
            'Fuzz',
            'False',
            true,
            someone(),
            [{ value: ids.scimUserId }],
            { active: false, displayName: 'Fuzz' },
            { [SCIM_USER]: { userName: someone() } },
          );
        return operation;
      });
    case 'userName':
      return someone();
    case 'displayName':
      return mostly(`Fuzz group ${rng.int(1e6)}`, `FUZZ GROUP ${rng.int(10)}`);
    case 'externalId':
      return mostly(`ext-${rng.int(1e6)}`);
    case 'name':
      return mostly(
        { givenName: 'Fuzz', familyName: mostly('Test') },
        { givenName: 'Ünï', [rng.pick(['middleName', 'honorificPrefix', 'GIVENNAME'])]: 'x' },
      );
    case 'emails':
      return [
        {
          value: someone(),
          primary: mostly(true, false, 'True'),
          ...(rng.chance(0.5) ? { type: mostly('work', 'home') } : {}),
        },
      ];
    case 'members':
      return [{ value: mostly(ids.scimUserId, ids.tenant.member.id) }];
    case 'filter':
      return rng.pick(SCIM_FILTERS);
    case 'startIndex':
    case 'count':
      return mostly(1, 0, -5, 2, 1e9, 2 ** 53 + 1, '3', 0.5);
    case 'attributes':
    case 'excludedAttributes':
      return [rng.pick(SCIM_ATTRIBUTES)];
    case 'active':
      return mostly(true, false, 'False', 'yes');
    default:
      return undefined;
  }
}

// ---- building a request --------------------------------------------------------------------------------------

interface Identities {
  tenant: Tenant;
  adminToken: string;
  apiKey: { key: string; secret: string };
  client: RegisteredClient;
  /** An `openid api` access token of the tenant's owner, of a client that needs no consent (a marketplace app's). */
  accessToken: string;
  cookie: string;
  origin: string;
  /** A directory token of the tenant (`tsd_...`), and a user and a group it provisioned. */
  scimToken: string;
  scimUserId: string;
  scimGroupId: string;
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
      const real: Record<string, string> = {
        id: target.path.includes('organizations')
          ? ids.tenant.id
          : target.path.includes('oauth-clients')
            ? ids.client.id
            : ids.tenant.member.id,
        user_id: ids.tenant.member.id,
        slug: 'no-such-product',
      };
      // Not for a DELETE: the rest of the run would find the directory's user and group gone.
      if (target.kind === 'scim' && target.method !== 'DELETE') {
        const [, resource] = /^\/scim\/v2\/(\w+)/.exec(target.path)!;
        real.id = (
          { Users: ids.scimUserId, Groups: ids.scimGroupId, ResourceTypes: 'User', Schemas: SCIM_USER } as Record<
            string,
            string
          >
        )[resource!]!;
      }
      if (real[name]) return real[name];
    }
    return rng.pick([
      '%00',
      'a%00b',
      '..',
      '%2e%2e',
      'x'.repeat(3000),
      '%E0%A4%A',
      '%ED%A0%80',
      '__proto__',
      '-1',
      'null',
      encodeURIComponent("' OR 1=1 --"),
      `00000000-0000-4000-8000-${String(rng.int(1e12)).padStart(12, '0')}`,
      `r${rng.int(1e6)}`,
    ]);
  });
}

function fields(rng: Rng, target: Target, ids: Identities): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of target.fields) {
    // A directory's request holds most of its resource's attributes, a plausible value more often than not.
    if (!rng.chance(target.kind === 'scim' ? 0.85 : 0.6)) continue;
    const scim = target.kind === 'scim' && rng.chance(0.8) ? scimValue(rng, field, ids) : undefined;
    if (scim !== undefined) out[field] = scim;
    // Real OAuth client credentials now and then, so that requests get past client authentication.
    else if (field === 'client_id' && rng.chance(0.5)) out[field] = ids.client.client_id;
    else if (field === 'client_secret' && rng.chance(0.5)) out[field] = ids.client.client_secret;
    else out[field] = value(rng);
  }
  if (rng.chance(0.15)) out[rng.pick(['zz_unknown', '__proto__', 'constructor', 'a\u0000b'])] = value(rng);
  return out;
}

const form = (rng: Rng, values: Record<string, unknown>) =>
  Object.entries(values)
    .map(
      ([k, v]) =>
        `${enc(k)}=${rng.chance(0.2) ? wireValue(rng) : enc(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))}`,
    )
    .join('&');

function graphqlBody(rng: Rng): unknown {
  const documents = [
    '{ __typename }',
    '{ viewer { user { email } platformAdmin } }',
    'query($l: Int, $c: String) { users(limit: $l, cursor: $c) { items { id } nextCursor } }',
    'mutation($i: CreateOrganizationInput!) { createOrganization(input: $i) { __typename } }',
    'query($id: ID!) { oauthClient(id: $id) { id } }',
    '{',
    'query { nope }',
    `{ ${'a: __typename '.repeat(30)} }`,
    `{ ${'viewer { '.repeat(15)}${'}'.repeat(15)} }`,
    'subscription { x }',
    'mutation { __typename }',
  ];
  const body: Record<string, unknown> = { query: rng.chance(0.9) ? rng.pick(documents) : value(rng) };
  if (rng.chance(0.7))
    body.variables = rng.chance(0.7) ? { l: value(rng), c: value(rng), i: value(rng), id: value(rng) } : value(rng);
  if (rng.chance(0.1)) body.operationName = value(rng);
  if (rng.chance(0.1)) body.extensions = value(rng);
  return rng.chance(0.05) ? [body, body] : body;
}

const CONTENT_TYPES = [
  'text/plain',
  'application/xml',
  'multipart/form-data',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/merge-patch+json',
  'application/graphql',
  'application/x-www-form-urlencoded; charset=utf-7',
  '',
  'foo',
  'application/x-sveltekit-formdata',
];

function build(rng: Rng, target: Target, ids: Identities): Fuzzed {
  const headers: Record<string, string> = {
    accept: rng.pick(['application/json', 'text/html', '*/*', 'application/graphql-response+json']),
  };
  let url = pathFor(rng, target, ids);

  // Credentials: none, garbage, or one of the run's identities (never for a request that would end it).
  // A directory token mostly where it belongs (/scim/v2), now and then elsewhere, where it opens nothing.
  const identities =
    target.kind === 'scim'
      ? ['none', 'garbage', 'scim', 'scim', 'scim', 'admin', 'apiKey', 'token']
      : ['none', 'garbage', 'admin', 'admin', 'member', 'apiKey', 'cookie', 'token', 'scim'];
  const who = target.ends ? rng.pick(['none', 'garbage']) : rng.pick(identities);
  if (who === 'garbage')
    headers.authorization = rng.pick([
      'Bearer',
      'Bearer a b',
      'Basic YWRtaW46YWRtaW4=',
      `Bearer tss_${'a'.repeat(5000)}`,
      'Bearer %00',
      'Bearer eyJhbGciOiJub25lIn0.e30.',
      `Bearer tsd_${'a'.repeat(43)}`,
    ]);
  if (who === 'scim') headers.authorization = `${rng.pick(['Bearer', 'bearer', 'BEARER  '])} ${ids.scimToken}`;
  if (who === 'admin') headers.authorization = `Bearer ${ids.adminToken}`;
  if (who === 'member') headers.authorization = `Bearer ${ids.tenant.member.token}`;
  if (who === 'token') headers.authorization = `Bearer ${ids.accessToken}`;
  if (who === 'apiKey')
    Object.assign(headers, { authorization: `Bearer ${ids.apiKey.key}`, 'x-api-secret': ids.apiKey.secret });
  if (who === 'cookie' || (target.kind === 'portal' && !target.ends && rng.chance(0.7))) headers.cookie = ids.cookie;
  // Same-origin writes (CSRF checks pass), so the fuzzing reaches the handlers.
  if (target.method !== 'GET' && rng.chance(0.8)) headers.origin = ids.origin;

  const query = [...target.query, ...(rng.chance(0.2) ? ['limit', 'cursor', 'x', '__proto__', '%00'] : [])].filter(() =>
    rng.chance(0.5),
  );
  // SCIM's list parameters mostly as a directory sends them, so that lists get past paging into the filters.
  const queryValue = (name: string) => {
    const plausible = target.kind === 'scim' && rng.chance(0.7) ? scimQuery(rng, name) : undefined;
    return plausible === undefined ? wireValue(rng) : enc(plausible);
  };
  if (query.length)
    url += (url.includes('?') ? '&' : '?') + query.map((name) => `${name}=${queryValue(name)}`).join('&');
  if (rng.chance(0.05)) url += `${url.includes('?') ? '&' : '?'}limit=1&limit=2`;

  let body: Buffer | undefined;
  if (target.method !== 'GET' && rng.chance(0.95)) {
    const values = target.kind === 'graphql' ? graphqlBody(rng) : fields(rng, target, ids);
    const formLike = target.kind === 'portal' || (target.kind === 'oauth' && rng.chance(0.6));
    let text: string;
    let type: string;
    switch (rng.int(10)) {
      case 0:
        text = rng.pick(INVALID_JSON);
        type = 'application/json';
        break;
      case 1:
        text = rng.pick(['[]', '"s"', '42', 'null', 'true', '[{"a":1}]']);
        type = 'application/json';
        break;
      case 2:
        text = rng.chance(0.5) ? '{"a":'.repeat(3000) + '1' + '}'.repeat(3000) : '['.repeat(10000) + ']'.repeat(10000);
        type = 'application/json';
        break;
      case 3:
        text = JSON.stringify({ ...(values as object), pad: 'x'.repeat(rng.chance(0.2) ? 1_100_000 : 70_000) });
        type = 'application/json';
        break;
      default:
        text =
          formLike && !Array.isArray(values) ? form(rng, values as Record<string, unknown>) : JSON.stringify(values);
        type = formLike ? 'application/x-www-form-urlencoded' : 'application/json';
    }
    if (target.kind === 'graphql' && rng.chance(0.1))
      [text, type] = [String((values as { query?: unknown }).query), 'application/graphql'];
    if (rng.chance(0.2)) type = rng.pick(CONTENT_TYPES);
    if (type) headers['content-type'] = type;
    body = rng.chance(0.1) ? withBadBytes(rng, text) : Buffer.from(text);
    if (rng.chance(0.15)) {
      const encoding = rng.pick(['gzip', 'gzip', 'br', 'br', 'deflate', 'x-bogus', 'gzip, br', 'identity', 'zstd']);
      headers['content-encoding'] = encoding;
      if (rng.chance(0.5))
        body = encoding === 'br' ? brotliCompressSync(body) : encoding.startsWith('gzip') ? gzipSync(body) : body;
      else body = Buffer.from(rng.pick(['not compressed at all', '\u0000\u0001\u0002', '']));
    }
  } else if (target.kind === 'graphql') {
    const { query, variables } = graphqlBody(rng) as { query?: unknown; variables?: unknown };
    url += `?query=${enc(String(query))}`;
    if (variables !== undefined)
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a value's default stringification is one of the shapes the fuzzer sends
      url += `&variables=${rng.chance(0.3) ? wireValue(rng) : enc(rng.chance(0.7) ? JSON.stringify(variables) : String(variables))}`;
  }
  return {
    method: rng.chance(0.03) ? rng.pick(['PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']) : target.method,
    path: url,
    headers,
    body,
    chunked: !!body && rng.chance(0.2),
  };
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
    const req = http.request(
      { host: url.hostname, port: url.port, method: r.method, path: r.path, headers, agent: false, timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
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
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => void (JSON.parse(line).level >= 50 && errorLogs.push(JSON.parse(line))) },
  );
  // One webhook host resolves (to a public address), for the query sweep's webhook, which is switched off at once.
  server = await startTestServer({
    logger,
    webhookResolver: (host) =>
      host === QUERY_SWEEP_HOOK ? Promise.resolve([{ address: '93.184.215.14', family: 4 }]) : systemResolver(host),
  });
  const admin = await signIn(server.url, ADMIN.email, ADMIN.password);
  const tenant = await createTenant(server.url, admin.api);
  const key = await tenant.owner.api.post('/api/v1/api-keys', { name: 'fuzz' });
  const client = await registerClient(admin.api, {
    name: 'fuzz',
    organization_id: tenant.id,
    redirect_uris: ['https://app.example.test/cb'],
    allowed_scopes: ['openid', 'offline_access'],
    grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
  });
  const portal = await signIn(server.url, tenant.owner.email, 'a long enough password');
  const app = await registerClient(tenant.owner.api, {
    name: 'fuzz app',
    redirect_uris: [APP_REDIRECT],
    allowed_scopes: ['openid', 'profile', 'email', 'api'],
    consent_required: false,
  });
  const accessToken = await accessTokenOf(server.url, tenant.owner, app, APP_REDIRECT, 'openid api');
  const scimToken = (await tenant.owner.api.post('/api/v1/scim-tokens', { name: 'fuzz directory' })).body
    .token as string;
  const directory = tenant.owner.api.as({ token: scimToken });
  const scimUser = await directory.post('/scim/v2/Users', {
    schemas: [SCIM_USER],
    userName: 'fuzz-directory-user@example.test',
    name: { givenName: 'Fuzz' },
  });
  const scimGroup = await directory.post('/scim/v2/Groups', {
    schemas: [SCIM_SCHEMAS[1]],
    displayName: 'Fuzz directory group',
    members: [{ value: scimUser.body.id }],
  });
  expect([scimUser.status, scimGroup.status]).toEqual([201, 201]);
  ids = {
    tenant,
    adminToken: admin.login.token,
    apiKey: { key: key.body.key, secret: key.body.secret },
    client,
    accessToken,
    cookie: `tessera_session=${portal.login.token}`,
    origin: new URL(server.url).origin,
    scimToken,
    scimUserId: scimUser.body.id,
    scimGroupId: scimGroup.body.id,
  };
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
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < requests.length) {
        const index = next++;
        await sendOne(requests[index]!, index);
      }
    }),
  );
  if (process.env.FUZZ_VERBOSE)
    console.info([...statuses].sort(), [...slowest].sort((a, b) => b[1] - a[1]).slice(0, 10));
  // The portal's errors, with their stacks: a 5xx of a portal page is explained there, not in the service's log.
  const portalErrors = consoleErrors.mock.calls.map((c) =>
    (c[0] instanceof Error ? (c[0].stack ?? String(c[0])) : String(c[0])).slice(0, 1500),
  );
  consoleErrors.mockRestore();

  // The error log says why a 5xx happened: shown with the failures.
  const logged = errorLogs.map((line) => JSON.stringify(line).slice(0, 1500));
  expect(
    { failures, logged, portalErrors },
    `seed ${SEED}: ${failures.length} answers of 5xx, ${logged.length} error-level log lines, ${portalErrors.length} portal errors`,
  ).toEqual({ failures: [], logged: [], portalErrors: [] });
}, 120_000);

// ---- every route with an access token ----------------------------------------------------------------------------

/**
 * A credential in an answer: a session, an API key or its secret, a client secret, an invitation link, a directory
 * token, a reset or verification link, a refresh token, an authorization code, an SSO browser token, a webhook secret.
 */
const FIRST_PARTY_CREDENTIAL = /\b(?:(?:tss|tsk|tsks|tscs|tsi|tsd|tsr|tsv|tsa|tsb)_|whsec_)[A-Za-z0-9_+/=-]{16,}/;

/**
 * The mutation each REST route runs (a route is one schema operation, server/rest/route.ts), by its documented method
 * and path: a route is refused or allowed as the mutation's list below says, so a route added later is placed too.
 */
const MUTATION_OF_ROUTE = new Map<string, string>(
  [
    ...[...apiV1Routes, ...oauthClientRoutes].map((r) => ['/api/v1', r] as const),
    ...v1Routes.map((r) => ['/v1', r] as const),
  ].flatMap(([prefix, r]) => {
    const mutation = /^\s*mutation\b[^{]*\{\s*(\w+)/.exec(print(r.operation))?.[1];
    return mutation ? [[`${r.method} ${prefix}${r.path.replace(/:(\w+)/g, '{$1}')}`, mutation] as const] : [];
  }),
);
/** An id no record has. */
const PLACEHOLDER_ID = '01930000-0000-7000-8000-000000000000';

it('answers every documented route called with an access token as its mutation is listed: the first-party ones refused as such, none with a credential', async () => {
  const platform = client(server.url, { token: ids.adminToken });
  // Its own client and token: the fuzzer above may have disabled or deleted the run's.
  const app = await registerClient(platform, {
    name: 'sweep app',
    organization_id: ids.tenant.id,
    redirect_uris: [APP_REDIRECT],
    allowed_scopes: ['openid', 'api'],
    consent_required: false,
  });
  const token = client(server.url, {
    token: await accessTokenOf(server.url, ids.tenant.owner, app, APP_REDIRECT, 'openid api'),
  });
  const other = await platform.post('/v1/organizations', { name: 'Elsewhere' });
  const invitation = await platform.post(`/v1/organizations/${other.body.id}/invitations`, {
    email: ids.tenant.owner.email,
    role: 'owner',
  });
  expect(invitation.status).toBe(201);
  // A pending invitation of the token's own organization, for the route that mails it again with a new link.
  const pending = await platform.post(`/v1/organizations/${ids.tenant.id}/invitations`, {
    email: 'pending-resend@example.test',
    role: 'member',
  });
  expect(pending.status).toBe(201);
  // Valid bodies for the routes that mint a credential, so that the refusal is the credential's, not the body's.
  const bodies: Record<string, unknown> = {
    'POST /api/v1/api-keys': { name: 'minted by a token', role: 'admin' },
    'POST /api/v1/oauth-clients': {
      name: 'minted by a token',
      redirect_uris: [APP_REDIRECT],
      allowed_scopes: ['openid', 'api'],
      consent_required: false,
    },
    'POST /api/v1/oauth-clients/{id}/rotate-secret': {},
    'POST /api/v1/oauth-clients/registration-tokens': { name: 'minted by a token', scopes: ['openid'] },
    'POST /v1/organizations/{id}/invitations': { email: 'minted@example.test', role: 'owner' },
    'POST /api/v1/invitations/accept': { token: invitation.body.token, password: 'a long enough password' },
    'PATCH /api/v1/users/me': { current_password: 'a long enough password', password: 'a new long enough password' },
    // The caller's own account, as proven (a platform admin's power, but not through an app).
    'PATCH /v1/users/{id}': { email_verified: true },
    'POST /api/v1/webhooks/{id}/reveal-secret': {},
    // A new invitation link (answered and mailed), a password reset link (mailed): both outlive the token.
    'POST /v1/organizations/{id}/invitations/{invitation_id}/resend': {},
    'POST /v1/users/{id}/password-reset': {},
    // A passkey is a credential of the person: only their session adds one.
    'POST /api/v1/users/me/passkeys/options': {},
    'POST /api/v1/users/me/passkeys': { name: 'minted by a token', response: {} },
    // Nor an authenticator app or recovery codes: valid bodies, so that the refusal is the token's.
    'POST /api/v1/users/me/mfa/totp': {},
    'POST /api/v1/users/me/mfa/totp/confirm': { code: '123456' },
    'POST /api/v1/users/me/mfa/recovery-codes': { password: 'a long enough password' },
    'PATCH /api/v1/users/me/passkeys/{id}': { name: 'renamed by a token' },
    // What decides who signs in to the organization, and how.
    'POST /api/v1/domains': { domain: 'minted-by-a-token.example.test' },
    'POST /api/v1/domains/{id}/verify': {},
    'POST /api/v1/connections': {
      type: 'oidc',
      name: 'Minted by a token',
      issuer: 'https://idp.example.test',
      client_id: 'x',
      client_secret: 'y',
    },
    'PATCH /api/v1/connections/{id}': { name: 'changed by a token' },
    'PATCH /v1/organizations/{id}': { require_mfa: false },
    // Credentials of the organization, and what outlives the token.
    'POST /api/v1/scim-tokens': { name: 'minted by a token' },
    'POST /api/v1/directory/group-mappings': { group: 'Minted by a token', role: 'member' },
    'PATCH /api/v1/oauth-clients/{id}': { redirect_uris: ['https://evil.example.test/cb'] },
    'POST /api/v1/webhooks': { url: 'https://hooks.example.test/minted', events: ['user.created'] },
    'PATCH /api/v1/webhooks/{id}': { url: 'https://hooks.example.test/redirected' },
    'POST /api/v1/webhooks/{id}/rotate-secret': {},
    'POST /api/v1/apps': {
      name: 'Minted by a token',
      webhook_url: 'https://hooks.example.test/app',
      redirect_uris: [APP_REDIRECT],
      scopes: ['openid'],
    },
    'POST /api/v1/apps/{id}/install': {},
    'POST /v1/organizations': { name: 'Minted by a token' },
  };
  // The bodies of deletions that take one; every deletion names an id that does not exist (but the organization's, and
  // the caller's own account, which takes a fresh proof the sweep does not give), so nothing is deleted.
  const deleteBodies: Record<string, unknown> = {
    'DELETE /api/v1/users/me/passkeys/{id}': { password: 'a long enough password' },
    'DELETE /api/v1/users/me/mfa/totp': { password: 'a long enough password' },
    'DELETE /api/v1/api-keys': { id: PLACEHOLDER_ID },
    // The caller's own account (deleteUser with its id), without the fresh proof: refused before that is asked.
    'DELETE /v1/users/{id}': undefined,
  };
  const answers: string[] = [];
  const wrong: string[] = [];
  for (const target of OPENAPI_TARGETS) {
    // Signing out would end the run's own identities (the fuzzer above sends that with bogus credentials); deleting
    // the account asks a fresh proof first, so it is swept like the rest.
    const route = `${target.method} ${target.path}`;
    if ((target.ends && route !== 'DELETE /api/v1/users/me') || (target.kind !== 'rest' && target.kind !== 'scim'))
      continue;
    const deleting = target.method === 'DELETE';
    const url = target.path.replace(/\{(\w+)\}/g, (_, name: string) =>
      name === 'id' && target.path.includes('organizations')
        ? ids.tenant.id
        : target.path === '/v1/users/{id}' && target.method !== 'GET'
          ? ids.tenant.owner.id
          : deleting
            ? PLACEHOLDER_ID
            : name === 'id' && target.path.includes('oauth-clients')
              ? app.id
              : name === 'invitation_id'
                ? pending.body.id
                : ids.tenant.member.id,
    );
    const reply = await token.request(
      target.method,
      url,
      target.method === 'GET' ? undefined : deleting ? deleteBodies[route] : (bodies[route] ?? {}),
    );
    const answer = `${route}: ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`;
    answers.push(`${route} ${reply.status}`);
    expect(reply.status, answer).toBeLessThan(500);
    // /scim/v2 takes a directory token only.
    if (target.kind === 'scim') expect(reply.status, answer).toBe(401);
    expect(JSON.stringify(reply.body), route).not.toMatch(FIRST_PARTY_CREDENTIAL);
    // A route is what its mutation is: first-party whatever the arguments (null below), or for the ones its body here
    // gives; refused as such, not by a role or a missing record. The others are not refused as first-party.
    const mutation = MUTATION_OF_ROUTE.get(route);
    if (!mutation) continue;
    const given = FIRST_PARTY_MUTATIONS[mutation];
    const firstParty = given === null || (given !== undefined && (route in bodies || route in deleteBodies));
    const refused =
      reply.status === 403 && reply.body.error === 'forbidden' && reply.body.reason === 'first_party_only';
    if (firstParty !== refused) wrong.push(answer);
  }
  expect(wrong).toEqual([]);
  const swept = (r: string) => answers.some((a) => a.startsWith(`${r} `));
  expect(
    [...Object.keys(bodies), ...Object.keys(deleteBodies)].filter((r) => !swept(r)),
    'listed routes not documented',
  ).toEqual([]);
  expect(
    [...MUTATION_OF_ROUTE].filter(
      ([r, m]) => m in FIRST_PARTY_MUTATIONS && !swept(r) && r !== 'POST /api/v1/auth/logout',
    ),
    'first-party routes not swept',
  ).toEqual([]);
  expect(answers.length).toBeGreaterThan(30);
  // The invitation was not renewed: its link is still the one first mailed, and no other mail went to it.
  expect(await server.base.db.mail.count({ where: { toAddress: 'pending-resend@example.test' } })).toBe(1);
  expect(
    await server.base.db.membership.count({ where: { organizationId: other.body.id, userId: ids.tenant.owner.id } }),
  ).toBe(0);
});

// ---- every mutation with an access token ---------------------------------------------------------------------

/**
 * What mints, changes, reveals or ends a credential or a way to sign in, or would outlive the token, is first-party
 * (docs/architecture.md#authorization): an app's access token is refused with 403 `forbidden`, reason
 * `first_party_only`, whatever the arguments, here and on the REST routes that run them. Some are so only for some
 * arguments, given here (and as REST bodies above).
 */
const FIRST_PARTY_MUTATIONS: Record<string, Record<string, unknown> | null> = {
  // Ways to sign in, and proof of the person: their own session only.
  startSsoSignIn: { input: { connectionId: 'placeholder', link: true } },
  unlinkSsoIdentity: null,
  passkeyRegistrationOptions: null,
  registerPasskey: null,
  renamePasskey: null,
  removePasskey: null,
  enrollTotp: null,
  confirmTotp: null,
  removeTotp: null,
  regenerateRecoveryCodes: null,
  resetMemberMfa: null,
  updateMe: { input: { currentPassword: 'a long enough password', password: 'another long enough password' } },
  requestEmailVerification: null,
  sendPasswordReset: null,
  // Sessions and grants, and what a session alone decides.
  logout: null,
  revokeSession: null,
  revokeOtherSessions: null,
  switchOrganization: null,
  decideConsent: null,
  decideDeviceRequest: null,
  deleteMe: null,
  revokeConnectedApp: null,
  // Credentials of an organization.
  createApiKey: null,
  revokeApiKey: null,
  createOAuthClient: null,
  updateOAuthClient: null,
  deleteOAuthClient: null,
  rotateOAuthClientSecret: null,
  createRegistrationToken: null,
  deleteRegistrationToken: null,
  createScimToken: null,
  revokeScimToken: null,
  createDirectoryGroupMapping: null,
  deleteDirectoryGroupMapping: null,
  createWebhook: null,
  updateWebhook: null,
  rotateWebhookSecret: null,
  revealWebhookSecret: null,
  createApp: null,
  updateApp: null,
  deleteApp: null,
  rotateAppSecret: null,
  installApp: null,
  uninstallApp: null,
  // Who signs in to an organization, and how.
  addDomain: null,
  verifyDomain: null,
  deleteDomain: null,
  createSsoConnection: null,
  updateSsoConnection: null,
  deleteSsoConnection: null,
  // Its name is the token's to change; whether members need a second factor is not (the tenant's own id, since the
  // owner's role is checked first).
  updateOrganization: { id: 'tenant', input: { requireMfa: false } },
  // Another's account is a platform admin's to delete (and no token's of anyone else); one's own, as deleteMe.
  deleteUser: { id: 'self' },
  // A profile is the token's to change; whether the address is proven (what joins a sign-in to the account) is not.
  updateUser: { id: 'self', input: { emailVerified: true } },
  // Memberships beyond the token's organization, and links that outlive it.
  createOrganization: null,
  createInvitation: null,
  resendInvitation: null,
  acceptInvitation: null,
};

/** What an app's token may call, and why. */
const APP_MUTATIONS: Record<string, string> = {
  login: 'a way in with its own proof (the password); the token adds nothing',
  completeMfaLogin: 'a way in with its own proof (the challenge and a code)',
  passkeySignInOptions: 'anonymous: a challenge for any passkey',
  passkeySignIn: 'a way in with its own proof (a passkey)',
  completeSsoSignIn: "a way in with its own proof (the provider's answer, bound to the browser that started it)",
  requestPasswordReset: 'anonymous, mails the address only, and answers the same either way',
  confirmPasswordReset: 'a way in with its own proof (the mailed link)',
  verifyEmail: 'its own proof (the mailed link)',
  assignSeat: "a seat of its organization's subscription: no credential",
  unassignSeat: "a seat of its organization's subscription: no credential",
  createSubscription: 'subscriptions are what `api` is for; no credential',
  updateSubscription: 'subscriptions are what `api` is for; no credential',
  cancelSubscription: 'subscriptions are what `api` is for; no credential',
  createProduct: 'the catalog (platform admins): no credential',
  updateProduct: 'the catalog (platform admins): no credential',
  deleteProduct: 'the catalog (platform admins): no credential',
  changeMemberRole: "its organization's membership, bounded by the user's role",
  transferOwnership: "its organization's membership, bounded by the user's role",
  removeMember: "its organization's membership: ends what was issued for it",
  revokeInvitation: 'ends a pending link; mints none',
  deleteWebhook: 'ends a webhook and its secret: mints nothing',
  sendTestWebhook: "a delivery to the webhook's own address, signed with its secret, which it does not show",
  retryWebhookDelivery: 'a delivery again, as sent before',
};

/** A value of `type` that graphql accepts, so that what answers is the resolver's gate and not variable coercion. */
function placeholder(type: GraphQLInputType): unknown {
  if (isNonNullType(type)) return placeholder(type.ofType);
  if (isListType(type)) return [];
  if (isEnumType(type)) return type.getValues()[0]!.value;
  if (isInputObjectType(type)) {
    return Object.fromEntries(
      Object.values(type.getFields())
        .filter((f) => isNonNullType(f.type))
        .map((f) => [f.name, placeholder(f.type)]),
    );
  }
  return (
    ({ Boolean: false, Int: 1, Float: 1, DateTime: '2030-01-01T00:00:00Z', JSON: {} } as Record<string, unknown>)[
      getNamedType(type).name
    ] ?? PLACEHOLDER_ID
  );
}

it('answers every GraphQL mutation called with an access token: the first-party ones refused as such, the others never with a credential', async () => {
  const platform = client(server.url, { token: ids.adminToken });
  const app = await registerClient(platform, {
    name: 'mutation sweep app',
    organization_id: ids.tenant.id,
    redirect_uris: [APP_REDIRECT],
    allowed_scopes: ['openid', 'api'],
    consent_required: false,
  });
  const token = client(server.url, {
    token: await accessTokenOf(server.url, ids.tenant.owner, app, APP_REDIRECT, 'openid api'),
  });
  // Read from the executable schema: a mutation added later is swept without touching this file, and fails it until
  // it is placed in one of the lists.
  const mutations = Object.values(schema.getMutationType()!.getFields());
  const names = mutations.map((m) => m.name);
  expect(
    names.filter((n) => !(n in FIRST_PARTY_MUTATIONS) && !(n in APP_MUTATIONS)),
    'mutations in neither list',
  ).toEqual([]);
  expect(
    [...Object.keys(FIRST_PARTY_MUTATIONS), ...Object.keys(APP_MUTATIONS)].filter((n) => !names.includes(n)),
    'listed mutations that do not exist',
  ).toEqual([]);
  expect(
    Object.keys(FIRST_PARTY_MUTATIONS).filter((n) => n in APP_MUTATIONS),
    'in both lists',
  ).toEqual([]);

  const wrong: string[] = [];
  for (const mutation of mutations) {
    const given = FIRST_PARTY_MUTATIONS[mutation.name] ?? {};
    const real = (value: unknown) =>
      value === 'tenant' ? ids.tenant.id : value === 'self' ? ids.tenant.owner.id : value;
    const variables = Object.fromEntries(
      mutation.args.map((a) => [a.name, a.name in given ? real(given[a.name]) : placeholder(a.type)]),
    );
    const declared = mutation.args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
    const call = mutation.args.map((a) => `${a.name}: $${a.name}`).join(', ');
    const selection = isCompositeType(getNamedType(mutation.type)) ? ' { __typename }' : '';
    const query = `mutation${declared ? `(${declared})` : ''} { ${mutation.name}${call ? `(${call})` : ''}${selection} }`;
    const reply = await token.post('/graphql', { query, variables });
    const error = reply.body.errors?.[0];
    const refused =
      error?.extensions?.code === 'forbidden' &&
      error.extensions.reason === 'first_party_only' &&
      reply.body.data?.[mutation.name] == null;
    const answer = `${mutation.name}: ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`;
    expect(reply.status, answer).toBeLessThan(500);
    expect(JSON.stringify(reply.body), answer).not.toMatch(FIRST_PARTY_CREDENTIAL);
    // Refused by the first-party rule, not by the arguments, a role or a missing record; and the others are not.
    if (mutation.name in FIRST_PARTY_MUTATIONS !== refused) wrong.push(answer);
  }
  expect(wrong).toEqual([]);
});

/** Every field of `type` that needs no argument, `depth` levels down: all that a caller could read there. */
function selectionOf(type: GraphQLOutputType, depth: number): string {
  const named = getNamedType(type);
  if (!isCompositeType(named)) return '';
  if (!isObjectType(named) || depth === 0) return ' { __typename }';
  const fields = Object.values(named.getFields()).filter((f) => f.args.every((a) => !isNonNullType(a.type)));
  return ` { __typename ${fields.map((f) => f.name + selectionOf(f.type, depth - 1)).join(' ')} }`;
}

it('answers every GraphQL query called with an access token, every field it may read selected, never with a credential', async () => {
  // Something of each kind whose secret must not show: a webhook (its signing secret), a directory token (made in
  // beforeAll), an invitation (its links), an API key and a client (their secrets). A fresh session of the owner: the
  // fuzzer above may have ended the run's.
  const owner = (await signIn(server.url, ids.tenant.owner.email, 'a long enough password')).api;
  const hook = await owner.post('/api/v1/webhooks', {
    url: `https://${QUERY_SWEEP_HOOK}/hook`,
    events: ['subscription.renewed'],
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  const off = await owner.patch(`/api/v1/webhooks/${hook.body.id}`, { isActive: false });
  expect(off.status, JSON.stringify(off.body)).toBe(200);
  expect(
    (await owner.post(`/v1/organizations/${ids.tenant.id}/invitations`, { email: 'query-sweep@example.test' })).status,
  ).toBe(201);
  const platform = client(server.url, { token: ids.adminToken });
  const app = await registerClient(platform, {
    name: 'query sweep app',
    organization_id: ids.tenant.id,
    redirect_uris: [APP_REDIRECT],
    allowed_scopes: ['openid', 'api'],
    consent_required: false,
  });
  const token = client(server.url, {
    token: await accessTokenOf(server.url, ids.tenant.owner, app, APP_REDIRECT, 'openid api'),
  });
  const read: string[] = [];
  for (const query of Object.values(schema.getQueryType()!.getFields())) {
    // The arguments it needs: the token's organization and the webhook's own id, so that real records are read;
    // placeholders elsewhere.
    const args = query.args.filter((a) => isNonNullType(a.type));
    const real = (name: string) =>
      name === 'organizationId'
        ? ids.tenant.id
        : name === 'id' && query.name.startsWith('webhook')
          ? hook.body.id
          : undefined;
    const variables = Object.fromEntries(args.map((a) => [a.name, real(a.name) ?? placeholder(a.type)]));
    const declared = args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
    const call = args.map((a) => `${a.name}: $${a.name}`).join(', ');
    const document = `query${declared ? `(${declared})` : ''} { ${query.name}${call ? `(${call})` : ''}${selectionOf(query.type, 3)} }`;
    const reply = await token.post('/graphql', { query: document, variables });
    const answer = `${query.name}: ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`;
    expect(reply.status, answer).toBeLessThan(500);
    expect(JSON.stringify(reply.body), answer).not.toMatch(FIRST_PARTY_CREDENTIAL);
    // Refused, not found or a placeholder refused is fine; an error of the document itself (no field's path: its
    // depth, cost or validation) would make the sweep prove nothing.
    expect(reply.body.errors?.filter((e: { path?: unknown }) => !e.path) ?? [], answer).toEqual([]);
    if (reply.body.data?.[query.name] != null) read.push(query.name);
  }
  expect(read).toEqual(
    expect.arrayContaining(['webhooks', 'webhook', 'scimTokens', 'invitations', 'apiKeys', 'oauthClients']),
  );
});

// ---- hostile webhook receivers -----------------------------------------------------------------------------------

describe('webhook receivers that answer what no receiver should', () => {
  const clock = movableClock();
  const TIMEOUT_MS = 3000;
  const HUGE = 300 * 1024 * 1024;
  let ca: TestCa;
  let receiver: HttpsReceiver;
  let hooks: TestServer;
  let admin: Client;
  const logged: unknown[] = [];
  /** How many bytes the 300 MB answer got to write before Tessera stopped reading. */
  let hugeWritten = 0;

  /** A raw HTTP answer on the request's socket: headers Node's own server would refuse to write. */
  const raw = (res: ServerResponse, head: string, body: Buffer) => {
    res.socket!.end(Buffer.concat([Buffer.from(head, 'latin1'), body]));
  };

  beforeAll(async () => {
    ca = makeTestCa();
    receiver = await startHttpsReceiver(ca, (request, res) => {
      const path = request.path.split('?')[0]!;
      if (path.startsWith('/nul-fail'))
        return res.writeHead(500, { 'content-type': 'text/plain' }).end('fail\u0000\u0000 and more');
      if (path.startsWith('/nul')) return res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\u0000nul');
      if (path.startsWith('/bad-utf8'))
        return res
          .writeHead(200)
          .end(Buffer.from([0x6f, 0x6b, 0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0xf8, 0x88, 0x80, 0x80, 0x80]));
      if (path.startsWith('/bad-header'))
        return raw(
          res,
          'HTTP/1.1 200 OK\r\nX-Odd: \xff\xfe\x80\r\nContent-Length: 2\r\nConnection: close\r\n\r\n',
          Buffer.from('ok'),
        );
      if (path.startsWith('/nul-header'))
        return raw(
          res,
          'HTTP/1.1 200 OK\r\nX-Nul: a\u0000b\r\nContent-Length: 2\r\nConnection: close\r\n\r\n',
          Buffer.from('ok'),
        );
      if (path.startsWith('/huge')) {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(HUGE) });
        const chunk = Buffer.alloc(64 * 1024, 0);
        const pump = () => {
          while (hugeWritten < HUGE && !res.destroyed) {
            hugeWritten += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      if (path.startsWith('/drip')) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write('.')), 200);
        return res.on('close', () => clearInterval(timer));
      }
      res.writeHead(200).end('ok');
    });
    const logger = pino(
      { level: 'warn' },
      { write: (line: string) => void (JSON.parse(line).level >= 50 && logged.push(JSON.parse(line))) },
    );
    hooks = await startTestServer({
      role: 'all',
      clock,
      logger,
      env: { WEBHOOK_CA_FILE: ca.caFile, WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) },
      webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
    });
    admin = (await signIn(hooks.url, ADMIN.email, ADMIN.password)).api;
  }, 60_000);
  afterAll(async () => {
    await hooks?.stop();
    await receiver?.close();
    ca?.remove();
  });

  /** A webhook of a fresh organization to `path`, and one event for it; its delivery once `attempts` are recorded. */
  async function deliverTo(path: string) {
    const org = await admin.post('/v1/organizations', { name: `Hostile ${path}` });
    const hook = await admin.post('/api/v1/webhooks', {
      url: receiver.url('receiver.test', path),
      events: ['api_key.created'],
      organizationId: org.body.id,
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    expect((await admin.post('/api/v1/api-keys', { name: 'evented', organization_id: org.body.id })).status).toBe(201);
    const attempted = (n: number) =>
      waitFor(async () => {
        const reply = await admin.get(`/api/v1/webhooks/${hook.body.id}/deliveries`);
        expect(reply.status).toBe(200);
        const [delivery] = reply.body.deliveries;
        return delivery && delivery.attemptCount >= n ? delivery : undefined;
      }, 30_000);
    return { hookId: hook.body.id as string, attempted };
  }

  it('stores a reply with NUL bytes (as U+FFFD) and counts the attempt', async () => {
    const delivery = await (await deliverTo('/nul')).attempted(1);
    expect(delivery).toMatchObject({ status: 'delivered', statusCode: 200, attemptCount: 1 });
    expect(delivery.attempts[0].response.body).toBe('ok\ufffdnul');
  });

  it('stores a reply that is not UTF-8, and headers that are not ASCII or hold a NUL', async () => {
    const utf8 = await (await deliverTo('/bad-utf8')).attempted(1);
    const header = await (await deliverTo('/bad-header')).attempted(1);
    const nulHeader = await (await deliverTo('/nul-header')).attempted(1);

    expect(utf8).toMatchObject({ status: 'delivered', statusCode: 200 });
    expect(utf8.attempts[0].response.body).toMatch(/^ok\ufffd/);
    expect(utf8.attempts[0].response.body.isWellFormed()).toBe(true);
    expect(header).toMatchObject({ status: 'delivered', statusCode: 200 });
    // Whatever the parser made of the header, it was recorded, and the attempt counted as delivered or failed.
    expect(nulHeader.attemptCount).toBe(1);
    expect(['delivered', 'pending']).toContain(nulHeader.status);
  });

  it('stops reading a 300 MB answer after the first megabyte, and records its 2xx', async () => {
    const delivery = await (await deliverTo('/huge')).attempted(1);
    expect(delivery).toMatchObject({ status: 'delivered', statusCode: 200 });
    expect(delivery.attempts[0].response.body).toHaveLength(4096);
    expect(hugeWritten).toBeLessThan(HUGE / 10);
  });

  it('gives up on a slow drip at the time-out, and schedules the next attempt', async () => {
    const delivery = await (await deliverTo('/drip')).attempted(1);
    expect(delivery).toMatchObject({ status: 'pending', statusCode: null, attemptCount: 1 });
    expect(delivery.attempts[0].error).toMatch(/no answer within 3000 ms/);
  });

  it('keeps the five-attempt limit and the failing mark for a receiver that fails with NUL bytes', async () => {
    const { hookId, attempted } = await deliverTo('/nul-fail');
    let delivery = await attempted(1);
    for (const [n, minutes] of [
      [2, 1],
      [3, 4],
      [4, 10],
      [5, 45],
    ] as const) {
      clock.advance(minutes * MINUTE);
      // The drip's delivery is due again too.
      expect(await sweepDueDeliveries({ db: hooks.base.db, clock })).toBeGreaterThanOrEqual(1);
      delivery = await attempted(n);
    }
    expect(delivery).toMatchObject({ status: 'failed', attemptCount: 5, statusCode: 500, nextAttemptAt: null });
    expect(delivery.attempts.map((a: { response: { body: string } }) => a.response.body)).toEqual(
      Array(5).fill('fail\ufffd\ufffd and more'),
    );
    expect((await admin.get(`/api/v1/webhooks/${hookId}`)).body.failing).toBe(true);
    clock.advance(120 * MINUTE);
    await sweepDueDeliveries({ db: hooks.base.db, clock });
    const key = `webhook_delivery:${delivery.id}`;
    await waitFor(
      async () =>
        (
          await hooks.base.db.$queryRaw<
            { n: number }[]
          >`select count(*)::int as n from graphile_worker.jobs where key = ${key}`
        )[0]!.n === 0 || undefined,
    );
    expect(receiver.received.filter((r) => r.path.startsWith('/nul-fail'))).toHaveLength(5);
  });

  it('logged nothing at error level for any of them', () => {
    expect(logged).toEqual([]);
  });
});
