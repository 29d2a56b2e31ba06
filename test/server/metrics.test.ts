// /metrics: scraped as Prometheus would, parsed from the text format, and seen to move with the requests made.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signIn } from '../helpers/http.ts';
import { accessTokenOf, registerClient } from '../helpers/oauth.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { freePort } from '../e2e/process.ts';

const TOKEN = 'metrics-token-0123456789abcdef';

interface Family {
  name: string;
  type: string;
  metrics: { labels?: Record<string, string>; value?: string; count?: string; sum?: string; buckets?: Record<string, string> }[];
}

interface Scrape {
  text: string;
  families: Map<string, Family>;
}

async function scrape(url: string, token: string | null = TOKEN): Promise<Scrape> {
  const reply = await fetch(`${url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  expect(reply.status).toBe(200);
  expect(reply.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await reply.text();
  const families = parsePrometheusTextFormat(text) as Family[];
  return { text, families: new Map(families.map((f) => [f.name, f])) };
}

/** A counter's or gauge's value, of the series whose labels include `labels`. */
function sample({ families }: Scrape, family: string, labels: Record<string, string>): number {
  const found = families.get(family)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return Number(found?.value ?? 0);
}

/**
 * One series of a histogram: its buckets, count and sum; zeros when it has not been observed. The parser reads a
 * histogram's buckets, count and sum only without other labels, so it is given that one series' lines with their
 * series labels taken off.
 */
function histogram({ text }: Scrape, family: string, labels: Record<string, string>): { count: number; sum: number; buckets: Record<string, string> } {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const lines = text.split('\n').filter((line) =>
    line === `# TYPE ${family} histogram` || (line.startsWith(`${family}_`) && wanted.every((w) => line.includes(w)) && (line.match(/="/g)?.length ?? 0) - (line.includes('le="') ? 1 : 0) === wanted.length));
  const unlabelled = lines.map((line) => line.replace(/\{[^}]*\}/, (set) => (/le="[^"]*"/.exec(set) ? `{${/le="[^"]*"/.exec(set)![0]}}` : '')));
  const [parsed] = parsePrometheusTextFormat(`${unlabelled.join('\n')}\n`) as Family[];
  const series = parsed?.metrics[0];
  return { count: Number(series?.count ?? 0), sum: Number(series?.sum ?? 0), buckets: series?.buckets ?? {} };
}

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer({ role: 'all', env: { METRICS_TOKEN: TOKEN } });
  tenant = await createTenant(server.url, (await signIn(server.url, ADMIN.email, ADMIN.password)).api);
});
afterAll(() => server?.stop());

describe('GET /metrics on the public port', () => {
  it('answers only the bearer of METRICS_TOKEN', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789abcdef', `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`]) {
      const reply = await fetch(`${server.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(reply.status).toBe(401);
      expect(await reply.text()).not.toContain('tessera_');
    }
  });

  it('counts requests by route template, method and status, with their latency, never by raw path', async () => {
    const before = await scrape(server.url);
    const ids = [tenant.owner.id, tenant.admin.id, tenant.member.id];
    for (const id of ids) expect((await tenant.owner.api.get(`/v1/users/${id}`)).status).toBe(200);
    expect((await tenant.member.api.get('/v1/users/no-such-user')).status).toBe(404);
    const after = await scrape(server.url);

    const family = 'tessera_http_request_duration_seconds';
    const ok = { method: 'GET', route: '/v1/users/:id', status: '200' };
    const missing = { ...ok, status: '404' };
    expect(histogram(after, family, ok).count - histogram(before, family, ok).count).toBe(3);
    expect(histogram(after, family, missing).count - histogram(before, family, missing).count).toBe(1);
    expect(after.families.get(family)!.type).toBe('HISTOGRAM');
    // No id reaches a label: the label set stays bounded by the routes.
    for (const id of [...ids, 'no-such-user']) expect(after.text).not.toContain(id);
    // A latency histogram: cumulative buckets up to +Inf, which holds every request, and time spent.
    const series = histogram(after, family, ok);
    expect(Number(series.buckets['+Inf'])).toBe(series.count);
    expect(Number(series.buckets['0.001'])).toBeLessThanOrEqual(Number(series.buckets['10']));
    expect(series.sum).toBeGreaterThan(0);
  });

  it('counts sign-ins by outcome and tokens by grant type', async () => {
    const before = await scrape(server.url);
    const anonymous = client(server.url);
    expect((await anonymous.post('/api/v1/auth/login', { email: tenant.member.email, password: 'not the password' })).status).toBe(401);
    await signIn(server.url, ADMIN.email, ADMIN.password);
    const app = await registerClient(tenant.owner.api, {
      name: 'Metered', redirect_uris: ['https://app.example.test/cb'], allowed_scopes: ['openid', 'email'], consent_required: false,
    });
    await accessTokenOf(server.url, tenant.member, app, 'https://app.example.test/cb', 'openid email');
    const after = await scrape(server.url);

    const delta = (family: string, labels: Record<string, string>) => sample(after, family, labels) - sample(before, family, labels);
    expect(delta('tessera_sign_ins_total', { outcome: 'failure', method: 'password' })).toBe(1);
    // The admin above, and the member's session for the code flow.
    expect(delta('tessera_sign_ins_total', { outcome: 'success', method: 'password' })).toBe(2);
    expect(delta('tessera_tokens_issued_total', { grant_type: 'authorization_code' })).toBe(1);
    const token = { method: 'POST', route: '/oauth/token', status: '200' };
    expect(histogram(after, 'tessera_http_request_duration_seconds', token).count - histogram(before, 'tessera_http_request_duration_seconds', token).count).toBe(1);
  });

  it('shows the queue, the database pool and the process', async () => {
    const scraped = await scrape(server.url);
    expect(scraped.families.get('tessera_db_pool_connections')!.metrics.map((m) => m.labels!.state).sort()).toEqual(['idle', 'open', 'waiting']);
    expect(sample(scraped, 'tessera_db_pool_connections', { state: 'open' })).toBeGreaterThan(0);
    expect(scraped.families.has('tessera_jobs_queued')).toBe(true);
    expect(scraped.families.has('tessera_jobs_oldest_age_seconds')).toBe(true);
    expect(scraped.families.has('nodejs_eventloop_lag_seconds')).toBe(true);
    expect(scraped.families.has('process_cpu_user_seconds_total')).toBe(true);
  });
});

describe('METRICS_PORT', () => {
  it('serves /metrics on a port of its own, without a token, and nothing on the public port', async () => {
    const port = await freePort();
    const own = await startTestServer({ env: { METRICS_PORT: String(port) } });
    try {
      const scraped = await scrape(`http://127.0.0.1:${port}`, null);
      expect(scraped.families.has('tessera_http_request_duration_seconds')).toBe(true);
      expect((await fetch(`http://127.0.0.1:${port}/anything-else`)).status).toBe(404);
      expect((await fetch(`${own.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
    } finally {
      await own.stop();
    }
  });

  it('is not served at all, nor counted, when neither is set', async () => {
    const plain = await startTestServer();
    try {
      expect((await fetch(`${plain.url}/metrics`)).status).toBe(404);
      expect(plain.base.metrics).not.toHaveProperty('registry');
    } finally {
      await plain.stop();
    }
  });
});
