// The prom-client registry behind Metrics (docs/architecture.md#metrics), with the series an operator reads.
// Imported only when metrics are on (server/start.ts).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { poolStats, type Db } from '../db.ts';
import type { Metrics } from './metrics.ts';

export interface PrometheusMetrics extends Metrics {
  registry: Registry;
}

// Request latencies from a licence check (under a millisecond) to a slow GraphQL page.
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The registry, with the job queue and pool read from `db` at each scrape. */
export function prometheusMetrics(db: Db): PrometheusMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Histogram({
    name: 'tessera_http_request_duration_seconds',
    help: 'HTTP requests by route template, method and status, and their latency',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const tokens = new Counter({
    name: 'tessera_tokens_issued_total',
    help: 'Tokens issued at the token endpoint, by grant type',
    labelNames: ['grant_type'] as const,
    registers: [registry],
  });
  const signIns = new Counter({
    name: 'tessera_sign_ins_total',
    help: 'Sign-ins by outcome and method',
    labelNames: ['outcome', 'method'] as const,
    registers: [registry],
  });
  const webhooks = new Histogram({
    name: 'tessera_webhook_attempt_duration_seconds',
    help: 'Webhook delivery attempts by outcome, and their latency',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const mails = new Histogram({
    name: 'tessera_mail_attempt_duration_seconds',
    help: 'Mail sending attempts by outcome, and their latency',
    labelNames: ['outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  new Gauge({
    name: 'tessera_db_pool_connections',
    help: "The database pool's connections: open (the pool's size now), busy, idle, and requests waiting for one",
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const { total, idle, waiting } = poolStats(db);
      this.set({ state: 'open' }, total);
      this.set({ state: 'busy' }, total - idle);
      this.set({ state: 'idle' }, idle);
      this.set({ state: 'waiting' }, waiting);
    },
  });
  const oldest = new Gauge({
    name: 'tessera_jobs_oldest_age_seconds',
    help: 'Age of the oldest job that is due and not yet running (the backlog), by task',
    labelNames: ['task'] as const,
    registers: [],
  });
  new Gauge({
    name: 'tessera_jobs_queued',
    help: 'Jobs waiting in the queue (due now or later), by task',
    labelNames: ['task'] as const,
    registers: [registry],
    // Registered before the age gauge, so that one statement at each scrape sets both.
    async collect() {
      const rows = await db.$queryRaw<{ task: string; queued: number; oldest: number | null }[]>`
        select task_identifier as task, count(*)::int as queued,
               extract(epoch from now() - min(run_at) filter (where run_at <= now() and locked_at is null))::float8 as oldest
        from graphile_worker.jobs where attempts < max_attempts group by task_identifier`.catch(() => []);
      this.reset();
      oldest.reset();
      for (const r of rows) {
        this.set({ task: r.task }, r.queued);
        oldest.set({ task: r.task }, r.oldest ?? 0);
      }
    },
  });
  registry.registerMetric(oldest);
  const requestSeries = new Map<string, ReturnType<typeof requests.labels>>();
  return {
    registry,
    request: (method, route, status, seconds) => {
      // The series of a route, method and status is looked up once: prom-client hashes a label set on every observe.
      const key = `${method} ${status} ${route}`;
      let series = requestSeries.get(key);
      if (!series) requestSeries.set(key, (series = requests.labels({ method, route, status: String(status) })));
      series.observe(seconds);
    },
    tokenIssued: (grantType) => tokens.inc({ grant_type: grantType }),
    signIn: (outcome, method) => signIns.inc({ outcome, method }),
    webhookAttempt: (outcome, seconds) => webhooks.observe({ outcome }, seconds),
    mailAttempt: (outcome, seconds) => mails.observe({ outcome }, seconds),
  };
}
