// Tracing (docs/architecture.md#tracing): the real service as a child process, started as `npm start` starts it, sends
// its spans over OTLP/HTTP (JSON) to a receiver in this file. A token request is one trace: its HTTP server span named
// after the route, the database statements under it, and its log line carrying the trace id. A GraphQL request has an
// operation span, and so has a REST request, whose operation runs in-process. And a service started without OTEL_EXPORTER_OTLP_ENDPOINT loads nothing of OpenTelemetry's SDK.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { createTenant } from '../helpers/fixtures.ts';
import { client, signIn } from '../helpers/http.ts';
import { authorize, codeFrom, decideConsent, exchangeCode, registerClient, sessionOf } from '../helpers/oauth.ts';
import { ADMIN } from '../helpers/server.ts';
import { waitFor } from '../helpers/wait.ts';
import { cleanEnv, freePort, NODE, ROOT } from '../e2e/process.ts';

/** A span as the OTLP/JSON encoding has it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}
const SERVER = 2;
const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.intValue;
};
/** A statement's span (the pool's connects are database spans too). */
const isStatement = (span: OtlpSpan) =>
  span.name.startsWith('pg.query') &&
  (attribute(span, 'db.system') ?? attribute(span, 'db.system.name')) === 'postgresql';

/** An OTLP/HTTP receiver: POST /v1/traces, kept as received. */
function startReceiver() {
  const spans: OtlpSpan[] = [];
  const resources: Record<string, unknown>[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const request = JSON.parse(body.toString('utf8'));
      for (const r of request.resourceSpans ?? []) {
        resources.push(
          Object.fromEntries(
            (r.resource?.attributes ?? []).map((a: { key: string; value: { stringValue?: string } }) => [
              a.key,
              a.value.stringValue,
            ]),
          ),
        );
        for (const scope of r.scopeSpans ?? []) spans.push(...scope.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { server, spans, resources };
}

// Run ahead of the service: records every OpenTelemetry package that is resolved (by import or require), and at exit
// whether anything registered itself with the OpenTelemetry API, into the file TESSERA_TEST_MODULES names.
const RECORDER = `
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    const name = [...resolved.url.matchAll(/node_modules\\/(@opentelemetry\\/[^/]+)/g)].at(-1)?.[1];
    if (name) seen.add(name);
    return resolved;
  },
});
process.on('exit', () => writeFileSync(process.env.TESSERA_TEST_MODULES, JSON.stringify({ packages: [...seen], registered: Symbol.for('opentelemetry.js.api.1') in globalThis })));
`;

interface Child {
  url: string;
  output: () => string;
  /** SIGTERM, then what the recorder wrote once the process has ended. */
  stop(): Promise<{ packages: string[]; registered: boolean }>;
}

let database: TestDatabase;
let dataDir: string;
const children: ChildProcess[] = [];

/** `node server/main.ts`, as `npm start` runs it, on its own port, with `env` over the usual settings. */
async function startService(env: Record<string, string>): Promise<Child> {
  const port = await freePort();
  const modulesFile = path.join(dataDir, `modules-${port}.json`);
  const child = spawn(NODE, [`--import=data:text/javascript,${encodeURIComponent(RECORDER)}`, 'server/main.ts'], {
    cwd: ROOT,
    env: {
      ...cleanEnv(),
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      LOG_LEVEL: 'info',
      BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
      BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
      TESSERA_TEST_MODULES: modulesFile,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`the service ended:\n${output}`);
    // Its own line first: a probe alone could take another service's answer on the port for this one's.
    if (!output.includes('tessera listening on')) return undefined;
    return fetch(`${url}/readyz`).then(
      (r) => (r.ok ? true : undefined),
      () => undefined,
    );
  }, 60_000);
  return {
    url,
    output: () => output,
    async stop() {
      child.kill('SIGTERM');
      await closed;
      expect(output).toContain('"msg":"stopped"');
      return JSON.parse(await readFile(modulesFile, 'utf8'));
    },
  };
}

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-tracing-'));
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
  await database?.drop();
});

describe('tracing', () => {
  it('without OTEL_EXPORTER_OTLP_ENDPOINT (and without metrics) loads no OpenTelemetry package, and registers nothing', async () => {
    // given a service started without the variable, that has served a request and a GraphQL operation
    const service = await startService({});
    expect((await signIn(service.url, ADMIN.email, ADMIN.password)).login.token).toBeTruthy();
    expect((await client(service.url).post('/graphql', { query: '{ __typename }' })).status).toBe(200);

    // then, once it has stopped: not one OpenTelemetry package was loaded (prom-client, which requires the API for its
    // exemplars, is loaded only when metrics are on), and nothing registered
    const { packages, registered } = await service.stop();
    expect(packages).toEqual([]);
    expect(registered).toBe(false);
    expect(service.output()).not.toContain('trace_id');
  });

  it('with it: a token request is one trace, its server span named after the route with the statements under it, and its log line carries the trace id', async () => {
    // given a receiver and a service sending it its spans
    const receiver = startReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', () => resolve()));
    try {
      const endpoint = `http://127.0.0.1:${(receiver.server.address() as { port: number }).port}`;
      const service = await startService({
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=tracing-test',
      });
      const { url } = service;

      // when a member goes through the code flow (the consent decided through GraphQL) and the client redeems the code
      const { api: admin } = await signIn(url, ADMIN.email, ADMIN.password);
      const tenant = await createTenant(url, admin);
      const redirect = 'https://rp.tracing.test/cb';
      const app = await registerClient(admin, {
        name: 'Traced',
        redirect_uris: [redirect],
        allowed_scopes: ['openid'],
        organization_id: tenant.id,
      });
      const session = await sessionOf(url, tenant.member);
      const consent = await authorize(url, session, {
        client_id: app.client_id,
        redirect_uri: redirect,
        response_type: 'code',
        scope: 'openid',
        state: 's',
      });
      const back = await decideConsent(url, session, consent);
      const tokens = await exchangeCode(url, app, codeFrom(back), redirect);
      expect(tokens.status).toBe(200);
      // and a named GraphQL query
      expect((await client(url).post('/graphql', { query: 'query TracingProbe { __typename }' })).body).toEqual({
        data: { __typename: 'Query' },
      });
      // and a REST request, which runs its operation in-process rather than through /graphql
      expect((await admin.get('/api/v1/users/me')).status).toBe(200);
      const requestId = tokens.headers.get('x-request-id');
      const logLine = await waitFor(() =>
        service
          .output()
          .split('\n')
          .find((l) => l.includes(`"requestId":"${requestId}"`)),
      );

      // then, once the service has stopped (which sends what it buffered)
      const { packages, registered } = await service.stop();
      expect(packages).toEqual(
        expect.arrayContaining(['@opentelemetry/sdk-trace', '@opentelemetry/instrumentation-pg']),
      );
      expect(registered).toBe(true);
      const spans = receiver.spans;
      expect(receiver.resources[0]).toMatchObject({
        'service.name': 'tessera',
        'deployment.environment.name': 'tracing-test',
      });
      const byId = new Map(spans.map((s) => [s.spanId, s]));
      const under = (span: OtlpSpan, ancestor: OtlpSpan): boolean => {
        for (
          let at = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
          at;
          at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined
        ) {
          if (at.spanId === ancestor.spanId) return true;
        }
        return false;
      };

      // the token request: one server span, the root of its trace, with the route's template in its name
      const tokenSpans = spans.filter((s) => s.kind === SERVER && attribute(s, 'http.route') === '/oauth/token');
      expect(tokenSpans).toHaveLength(1);
      const token = tokenSpans[0]!;
      expect(token.name).toBe('POST /oauth/token');
      expect(token.parentSpanId || undefined).toBeUndefined();
      const trace = spans.filter((s) => s.traceId === token.traceId);
      expect(trace.filter((s) => s.kind === SERVER)).toEqual([token]);
      // every other span of the trace below it, the statements among them
      expect(trace.filter((s) => s !== token && !under(s, token))).toEqual([]);
      const statements = trace.filter(isStatement);
      expect(statements.length).toBeGreaterThan(0);
      // named by what they do, not by their prepared statements' hashes
      for (const statement of statements) expect(statement.name).toMatch(/^pg\.query:[A-Z]+ /);

      // its log line carries the trace and the server span
      expect(JSON.parse(logLine)).toMatchObject({
        path: '/oauth/token',
        status: 200,
        trace_id: token.traceId,
        span_id: token.spanId,
      });

      // the consent decided through GraphQL: an operation span under the /graphql server span, its statements under it
      // (REST's operations have spans too: the sign-in's mutation sits under POST /api/v1/auth/login)
      const mutation = spans.find(
        (s) =>
          attribute(s, 'graphql.operation.type') === 'mutation' && byId.get(s.parentSpanId!)?.name === 'POST /graphql',
      );
      expect(mutation).toBeDefined();
      const graphqlRequest = byId.get(mutation!.parentSpanId!)!;
      expect(graphqlRequest).toMatchObject({ kind: SERVER, name: 'POST /graphql' });
      expect(spans.filter((s) => isStatement(s) && under(s, mutation!)).length).toBeGreaterThan(0);
      // a named operation is named so
      const probe = spans.find((s) => s.name === 'query TracingProbe');
      expect(probe && attribute(probe, 'graphql.operation.name')).toBe('TracingProbe');
      // the REST request: its operation span under its server span, as /graphql's, with the statements under it
      const me = spans.find((s) => s.kind === SERVER && s.name === 'GET /api/v1/users/me');
      expect(me).toBeDefined();
      const meOperations = spans.filter(
        (s) => s.parentSpanId === me!.spanId && attribute(s, 'graphql.operation.type') === 'query',
      );
      expect(meOperations.map((s) => s.name)).toEqual(['query']);
      expect(spans.filter((s) => isStatement(s) && under(s, meOperations[0]!)).length).toBeGreaterThan(0);
      // health probes are not traced
      expect(spans.filter((s) => attribute(s, 'http.route') === '/readyz' || s.name.includes('readyz'))).toEqual([]);
    } finally {
      receiver.server.close();
    }
  });
});
