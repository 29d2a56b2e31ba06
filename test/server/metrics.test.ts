// /metrics: scraped as Prometheus would, parsed from the text format, and seen to move with the requests made.
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signIn } from '../helpers/http.ts';
import { accessTokenOf, registerClient } from '../helpers/oauth.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { makeTestCa, startHttpsReceiver, type HttpsReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { waitFor } from '../helpers/wait.ts';
import { freePort } from '../e2e/process.ts';

const TOKEN = 'metrics-token-0123456789abcdef';

interface Family {
  name: string;
  type: string;
  metrics: {
    labels?: Record<string, string>;
    value?: string;
    count?: string;
    sum?: string;
    buckets?: Record<string, string>;
  }[];
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
  const found = families
    .get(family)
    ?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  return Number(found?.value ?? 0);
}

/**
 * One series of a histogram: its buckets, count and sum; zeros when it has not been observed. The parser reads a
 * histogram's buckets, count and sum only without other labels, so it is given that one series' lines with their
 * series labels taken off.
 */
function histogram(
  { text }: Scrape,
  family: string,
  labels: Record<string, string>,
): { count: number; sum: number; buckets: Record<string, string> } {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const lines = text
    .split('\n')
    .filter(
      (line) =>
        line === `# TYPE ${family} histogram` ||
        (line.startsWith(`${family}_`) &&
          wanted.every((w) => line.includes(w)) &&
          (line.match(/="/g)?.length ?? 0) - (line.includes('le="') ? 1 : 0) === wanted.length),
    );
  const unlabelled = lines.map((line) =>
    line.replace(/\{[^}]*\}/, (set) => (/le="[^"]*"/.exec(set) ? `{${/le="[^"]*"/.exec(set)![0]}}` : '')),
  );
  const [parsed] = parsePrometheusTextFormat(`${unlabelled.join('\n')}\n`) as Family[];
  const series = parsed?.metrics[0];
  return { count: Number(series?.count ?? 0), sum: Number(series?.sum ?? 0), buckets: series?.buckets ?? {} };
}

let server: TestServer;
let tenant: Tenant;
let ca: TestCa;
let receiver: HttpsReceiver;

beforeAll(async () => {
  ca = makeTestCa();
  // A webhook receiver that answers 200 at /ok and 500 elsewhere.
  receiver = await startHttpsReceiver(
    ca,
    (request, res) => void res.writeHead(request.path === '/ok' ? 200 : 500).end(),
  );
  server = await startTestServer({
    role: 'all',
    env: { METRICS_TOKEN: TOKEN, WEBHOOK_CA_FILE: ca.caFile },
    webhookResolver: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  tenant = await createTenant(server.url, (await signIn(server.url, ADMIN.email, ADMIN.password)).api);
});
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
  ca?.remove();
});

/** The label sets of a family's series (a histogram's once each, from its _count lines). */
const seriesOf = ({ text }: Scrape, family: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith(`${family}_count{`))
    .map((line) => line.slice(0, line.lastIndexOf(' ')));

describe('GET /metrics on the public port', () => {
  it('answers only the bearer of METRICS_TOKEN', async () => {
    for (const authorization of [
      undefined,
      'Bearer wrong-token-0123456789abcdef',
      `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`,
    ]) {
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

  it('keeps one series per route template however many ids are requested: the label set does not grow', async () => {
    const family = 'tessera_http_request_duration_seconds';
    // Raw paths of every kind: an API route with an id (found or not), one nested under another id, a path no route
    // has, and a portal page with an id in its path.
    const paths = (id: string) => [
      `/v1/users/${id}`,
      `/api/v1/webhooks/${id}/deliveries`,
      `/api/v1/no-such-collection/${id}`,
      `/no-such-page-${id}`,
      `/admin/settings/webhooks/${id}`,
    ];
    const visit = async (id: string) => {
      for (const path of paths(id))
        await fetch(`${server.url}${path}?q=${id}`, {
          headers: { authorization: `Bearer ${tenant.owner.token}` },
          redirect: 'manual',
        }).then((r) => r.arrayBuffer());
    };
    // given each kind of path requested once, so that its series exists
    await visit(randomUUID());
    const before = await scrape(server.url);
    // when each is requested with 40 more distinct ids
    const ids = Array.from({ length: 40 }, () => randomUUID());
    for (const id of ids) await visit(id);
    const after = await scrape(server.url);
    // then not one series was added, and no id is in any label
    expect(seriesOf(after, family)).toEqual(seriesOf(before, family));
    for (const id of ids) expect(after.text).not.toContain(id);
    // and the requests were counted under their templates
    const counted = (scraped: Scrape, labels: Record<string, string>) => histogram(scraped, family, labels).count;
    expect(
      counted(after, { method: 'GET', route: '/v1/users/:id', status: '404' }) -
        counted(before, { method: 'GET', route: '/v1/users/:id', status: '404' }),
    ).toBe(40);
    const unmatched = { method: 'GET', route: '(unmatched)', status: '404' };
    expect(counted(after, unmatched) - counted(before, unmatched)).toBeGreaterThanOrEqual(80);
  });

  it('counts sign-ins by outcome and tokens by grant type', async () => {
    const before = await scrape(server.url);
    const anonymous = client(server.url);
    expect(
      (await anonymous.post('/api/v1/auth/login', { email: tenant.member.email, password: 'not the password' })).status,
    ).toBe(401);
    await signIn(server.url, ADMIN.email, ADMIN.password);
    const app = await registerClient(tenant.owner.api, {
      name: 'Metered',
      redirect_uris: ['https://app.example.test/cb'],
      allowed_scopes: ['openid', 'email'],
      consent_required: false,
    });
    await accessTokenOf(server.url, tenant.member, app, 'https://app.example.test/cb', 'openid email');
    const after = await scrape(server.url);

    const delta = (family: string, labels: Record<string, string>) =>
      sample(after, family, labels) - sample(before, family, labels);
    expect(delta('tessera_sign_ins_total', { outcome: 'failure', method: 'password' })).toBe(1);
    // The admin above, and the member's session for the code flow.
    expect(delta('tessera_sign_ins_total', { outcome: 'success', method: 'password' })).toBe(2);
    expect(delta('tessera_tokens_issued_total', { grant_type: 'authorization_code' })).toBe(1);
    const token = { method: 'POST', route: '/oauth/token', status: '200' };
    expect(
      histogram(after, 'tessera_http_request_duration_seconds', token).count -
        histogram(before, 'tessera_http_request_duration_seconds', token).count,
    ).toBe(1);
  });

  it('times webhook deliveries and mail by outcome', async () => {
    const before = await scrape(server.url);
    // given two webhooks of the tenant, one to a receiver that answers 200 and one to a receiver that answers 500
    for (const path of ['/ok', '/down']) {
      const hook = await tenant.admin.api.post('/api/v1/webhooks', {
        url: receiver.url('receiver.test', path),
        events: ['api_key.created'],
      });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    }
    // when an event is made for both, and a password reset is asked for (mailed to the development mailbox)
    expect((await tenant.admin.api.post('/api/v1/api-keys', { name: 'metered' })).status).toBe(201);
    expect((await client(server.url).post('/api/v1/auth/password-reset', { email: tenant.member.email })).status).toBe(
      202,
    );

    // then the worker's attempts are counted and timed: one delivered, one failed with attempts left, one mail kept
    const webhook = 'tessera_webhook_attempt_duration_seconds';
    const mail = 'tessera_mail_attempt_duration_seconds';
    const moved = (scraped: Scrape, family: string, outcome: string) =>
      histogram(scraped, family, { outcome }).count - histogram(before, family, { outcome }).count;
    const after = await waitFor(async () => {
      const scraped = await scrape(server.url);
      return moved(scraped, webhook, 'delivered') >= 1 &&
        moved(scraped, webhook, 'retrying') >= 1 &&
        moved(scraped, mail, 'mailbox') >= 1
        ? scraped
        : undefined;
    });
    expect([
      moved(after, webhook, 'delivered'),
      moved(after, webhook, 'retrying'),
      moved(after, mail, 'mailbox'),
    ]).toEqual([1, 1, 1]);
    expect(after.families.get(webhook)!.type).toBe('HISTOGRAM');
    const delivered = histogram(after, webhook, { outcome: 'delivered' });
    expect(delivered.sum).toBeGreaterThan(histogram(before, webhook, { outcome: 'delivered' }).sum);
    expect(Number(delivered.buckets['+Inf'])).toBe(delivered.count);
    // and the failed delivery's next attempt waits in the queue
    expect(sample(after, 'tessera_jobs_queued', { task: 'webhook_deliver' })).toBeGreaterThanOrEqual(1);
  });

  it('shows the queue, the database pool and the process', async () => {
    const scraped = await scrape(server.url);
    expect(
      scraped.families
        .get('tessera_db_pool_connections')!
        .metrics.map((m) => m.labels!.state)
        .sort(),
    ).toEqual(['busy', 'idle', 'open', 'waiting']);
    expect(sample(scraped, 'tessera_db_pool_connections', { state: 'open' })).toBeGreaterThan(0);
    expect(
      sample(scraped, 'tessera_db_pool_connections', { state: 'busy' }) +
        sample(scraped, 'tessera_db_pool_connections', { state: 'idle' }),
    ).toBe(sample(scraped, 'tessera_db_pool_connections', { state: 'open' }));
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
      // on loopback only (METRICS_HOST unset): the machine's other addresses refuse the connection
      const outside = Object.values(os.networkInterfaces())
        .flat()
        .filter((i) => i && !i.internal && i.family === 'IPv4')
        .map((i) => i!.address);
      for (const address of outside) {
        await expect(
          new Promise((resolve, reject) => net.connect(port, address).once('connect', resolve).once('error', reject)),
          address,
        ).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      }
    } finally {
      await own.stop();
    }
  });

  it('warns a worker given METRICS_TOKEN alone: it has no public port to serve them on', async () => {
    const lines: string[] = [];
    const worker = await startTestServer({
      role: 'worker',
      env: { METRICS_TOKEN: TOKEN },
      logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }),
    });
    await worker.stop();
    expect(
      lines
        .map((line) => JSON.parse(line))
        .filter((l) => l.level === 40)
        .map((l) => l.msg),
    ).toContain(
      'METRICS_TOKEN serves /metrics on the public port, which a worker has none of: set METRICS_PORT to scrape this process',
    );
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
