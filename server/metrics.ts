// /metrics in Prometheus' text format (docs/architecture.md#metrics): on the public port only with METRICS_TOKEN
// (Authorization: Bearer, else 401), or on a port of its own (METRICS_PORT, loopback by default) with nothing else.
import http from 'node:http';
import type Koa from 'koa';
import type { Metrics } from '../schema/metrics/metrics.ts';
import type { PrometheusMetrics } from '../schema/metrics/prometheus.ts';
import { constantTimeEqual } from '../schema/lib/crypto.ts';
import { expected } from '../schema/lib/expected.ts';

const registryOf = (metrics: Metrics) => (metrics as Partial<PrometheusMetrics>).registry;

/** The route's template for the request-metrics label: a matched route's pattern, never the raw path. */
export function routeLabel(ctx: Koa.Context): string {
  const state = ctx.state as { route?: string };
  // What no router matched: a portal page, or a refusal of a path or method that no route has.
  return (
    state.route ?? (ctx as { _matchedRoute?: string })._matchedRoute ?? (ctx.status >= 400 ? '(unmatched)' : '(portal)')
  );
}

/** Counts each request under its route template. First in the chain, so that it times everything after it. */
export function requestMetrics(metrics: Metrics): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      metrics.request(ctx.method, routeLabel(ctx), ctx.status, (performance.now() - started) / 1000);
    }
  };
}

/** GET /metrics on the public port, behind the bearer token; not there at all without one. */
export function metricsEndpoint(metrics: Metrics, token: string | undefined): Koa.Middleware {
  const registry = registryOf(metrics);
  return async (ctx, next) => {
    if (ctx.path !== '/metrics' || !registry || !token) {
      await next();
      return;
    }
    ctx.state.route = '/metrics';
    const given = /^Bearer (.+)$/.exec(ctx.get('Authorization'))?.[1] ?? '';
    if (!constantTimeEqual(given, token)) {
      ctx.status = 401;
      ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
      ctx.body = { error: 'unauthenticated', error_description: 'Send Authorization: Bearer <METRICS_TOKEN>' };
      return;
    }
    ctx.set('Content-Type', registry.contentType);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = await registry.metrics();
  };
}

/** METRICS_PORT: a server of its own that answers /metrics and nothing else. */
export async function startMetricsServer(metrics: Metrics, port: number, host: string): Promise<http.Server> {
  // start.ts makes the Prometheus metrics whenever METRICS_PORT is set.
  const registry = expected(registryOf(metrics), 'the Prometheus registry behind METRICS_PORT');
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || new URL(req.url ?? '/', 'http://metrics').pathname !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Only /metrics is served here\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('could not collect the metrics\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
