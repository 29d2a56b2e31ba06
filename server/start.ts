// Starts Tessera: configuration, database (embedded unless DATABASE_URL), migrations, bootstrap, signing
// keys, then the HTTP server and/or the worker as ROLE says. Returns a handle that shuts down in order.
import http from 'node:http';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config.ts';
import type { PortalHandler } from './portal.ts';
import { startEmbeddedPostgres, type RunningDatabase } from '../prisma/embedded.ts';
import { migrate } from '../prisma/migrate.ts';
import { createDb, type Db } from '../schema/db.ts';
import { systemClock, type Clock } from '../schema/lib/clock.ts';
import type { ContextBase } from '../schema/context.ts';
import { KeyStore } from '../schema/keys/signing-keys.ts';
import { SecretKeyMismatchError } from '../schema/keys/keys.errors.ts';
import { RateLimitLeases } from '../schema/lib/rate-limit-leases.ts';
import { RememberedClients } from '../schema/modules/oauth/remembered-clients.ts';
import { bootstrap, operatorOrganization } from '../schema/modules/organizations/bootstrap.service.ts';
import { ensureCliClient } from '../schema/modules/clients/cli-client.ts';
import type { RunningWorker } from '../worker/index.ts';
import { smtpMailer } from '../schema/modules/mail/transport.ts';
import { passkeysUnavailableReason } from '../schema/modules/passkeys/passkeys.service.ts';
import { noMetrics } from '../schema/metrics/metrics.ts';
import { startMetricsServer } from './metrics.ts';
import type { Tracing } from './tracing.ts';
import type { HostResolver } from '../schema/push/destination.ts';

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  logger?: Logger;
  /** Resolves webhook receivers' host names (tests); DNS when not given. */
  webhookResolver?: HostResolver;
  /** OpenTelemetry, started by main.ts before anything else loads (docs/architecture.md#tracing). */
  tracing?: Tracing;
}

export interface Running {
  url: string;
  config: Config;
  base: ContextBase;
  logger: Logger;
  stop(): Promise<void>;
}

const PORTAL_HANDLER = path.resolve(import.meta.dirname, '../portal/build/handler.js');

async function loadPortal(logger: Logger): Promise<PortalHandler | undefined> {
  if (
    !(await access(PORTAL_HANDLER).then(
      () => true,
      () => false,
    ))
  ) {
    logger.warn('the portal is not built (npm run build): /login, /portal and /admin are unavailable');
    return undefined;
  }
  // adapter-node reads these once, at import: it takes the request's protocol and host from headers that
  // server/portal.ts sets on every request (it would otherwise assume https, and SvelteKit's CSRF check
  // would refuse every form posted over http).
  process.env.PROTOCOL_HEADER = 'x-tessera-proto';
  process.env.HOST_HEADER = 'x-tessera-host';
  return ((await import(PORTAL_HANDLER)) as { handler: PortalHandler }).handler;
}

/**
 * Standard output, written in chunks of up to 4 KB at most a quarter of a second apart (pino's asynchronous
 * logging): a write per request line was a twentieth of userinfo's CPU. Pino writes out what is buffered on the
 * process's 'exit' event, which a stop on a signal (main.ts) and an uncaught exception both reach.
 */
const logDestination = () => pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 250 });

/**
 * Responses that close their connection once `stopping()`: `Connection: close`, then Node ends the connection after
 * the response. Without it a keep-alive connection whose request was in flight when the server stopped accepting
 * stays open, idle, until its client lets go (the 10 s force in stop() being the backstop). Every response's
 * headers pass through writeHead (Node's implicit headers call it too), the portal's as well as Koa's.
 */
function closingWhenStopping(stopping: () => boolean) {
  return class extends http.ServerResponse {
    override writeHead(
      statusCode: number,
      statusMessage?: string,
      headers?: http.OutgoingHttpHeaders | http.OutgoingHttpHeader[],
    ): this;
    override writeHead(statusCode: number, headers?: http.OutgoingHttpHeaders | http.OutgoingHttpHeader[]): this;
    override writeHead(...args: [number, ...unknown[]]): this {
      if (stopping()) this.shouldKeepAlive = false;
      return (super.writeHead as (...a: unknown[]) => this).apply(this, args);
    }
  } as typeof http.ServerResponse;
}

/** Without BASE_URL: the address we listen on, or localhost when listening on every interface. */
function defaultIssuer(host: string, port: number): string {
  const name = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
  return `http://${name}:${port}`;
}

export async function startTessera(options: StartOptions = {}): Promise<Running> {
  const config = await loadConfig(options.env);
  // With tracing, a line written during a request carries its trace_id and span_id (docs/architecture.md#tracing).
  const traceFields = options.tracing?.logFields;
  const logger =
    options.logger ??
    pino(
      {
        level: config.logLevel,
        base: { service: 'tessera', role: config.role },
        ...(traceFields ? { mixin: traceFields } : {}),
      },
      logDestination(),
    );
  const log = (msg: string) => logger.info(msg);

  // What has been started so far, stopped in reverse order: on shutdown, or when a later step of the start fails
  // (a port in use, say), so that no embedded PostgreSQL is left running on DATA_DIR.
  let embedded: RunningDatabase | undefined;
  let db: Db | undefined;
  let worker: RunningWorker | undefined;
  let server: http.Server | undefined;
  let metricsServer: http.Server | undefined;
  let draining = false;
  const stop = async () => {
    draining = true;
    metricsServer?.close();
    const serving = server;
    if (serving?.listening) {
      // Stop accepting, close idle keep-alive connections, and each other one after the response to its request in
      // flight (closingWhenStopping).
      const closed = new Promise<void>((resolve) => serving.close(() => resolve()));
      serving.closeIdleConnections();
      const force = setTimeout(() => serving.closeAllConnections(), 10_000);
      await closed;
      clearTimeout(force);
    }
    await worker?.stop();
    await db?.$disconnect();
    await embedded?.stop();
  };

  try {
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      embedded = await startEmbeddedPostgres(path.join(config.dataDir), log);
      databaseUrl = embedded.url;
    }
    // The migrations hold a session's advisory lock, and the worker LISTENs: neither survives a transaction-mode pooler.
    const directUrl = config.workerDatabaseUrl ?? databaseUrl;
    await migrate(directUrl, log);
    db = createDb(databaseUrl, { preparedStatements: config.preparedStatements });

    const outcome = await bootstrap(db, config.bootstrap);
    if (outcome === 'created' && config.bootstrap)
      log(`created the operator organization "${config.bootstrap.orgName}" owned by ${config.bootstrap.email}`);
    await ensureCliClient(db);
    if (outcome === 'needs-admin') {
      logger.warn(
        'no user exists yet: restart with BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD set to create the first administrator',
      );
    }

    let issuer = config.baseUrl;
    const keys = new KeyStore(db, config.secretKey);
    const base: ContextBase = {
      db,
      keys,
      clock: options.clock ?? systemClock,
      settings: {
        issuer: () => issuer ?? defaultIssuer(config.host, config.port),
        secretKey: config.secretKey,
        production: config.production,
        webhooks: {
          timeoutMs: config.webhookTimeoutMs,
          allowPrivateNetworks: config.webhookAllowPrivateNetworks,
          ca: config.webhookCa,
          resolve: options.webhookResolver,
        },
        webhookLimitPerOrganization: config.webhookLimitPerOrganization,
        auditTokenIssuance: config.auditTokenIssuance,
        metadataClients: config.metadataClients,
        dnsServers: config.dnsServers,
      },
      rateLimitLeases: new RateLimitLeases(),
      rememberedClients: new RememberedClients(),
      operatorOrganizationId: operatorOrganization(db),
      // prom-client is loaded only when something scrapes.
      metrics:
        config.metrics.token || config.metrics.port
          ? (await import('../schema/metrics/prometheus.ts')).prometheusMetrics(db)
          : noMetrics,
    };

    if (config.role !== 'worker') {
      // Before anything runs: a SECRET_KEY that cannot decrypt the stored keys is a configuration mistake.
      await keys.init().catch((error) => {
        throw error instanceof SecretKeyMismatchError ? new ConfigError(error.message) : error;
      });
    }
    // The worker before the port: once the port answers, the whole service is up.
    if (config.role !== 'api') {
      const mail = {
        db,
        clock: base.clock,
        mailer: config.mail.smtpUrl ? smtpMailer(config.mail.smtpUrl) : null,
        from: config.mail.from,
        issuer: base.settings.issuer,
        metrics: base.metrics,
      };
      // Each role loads only its own half: a worker holds no GraphQL, Koa or portal, an API process no job runner.
      const { startWorker } = await import('../worker/index.ts');
      worker = await startWorker(directUrl, {
        db,
        logger,
        clock: base.clock,
        secretKey: config.secretKey,
        webhooks: base.settings.webhooks,
        mail,
        metrics: base.metrics,
        retention: config.retention,
      });
    }
    if (config.role !== 'worker') {
      const { createApp } = await import('./app.ts');
      const app = createApp({
        base,
        logger,
        portal: await loadPortal(logger),
        trustProxy: config.trustProxy,
        rateLimits: config.rateLimits,
        metricsToken: config.metrics.token,
        tracing: options.tracing,
      });
      const handle = app.callback();
      // Koa answers a failed request itself (ctx.onerror), so the promise of each one never rejects.
      const listening = http.createServer({ ServerResponse: closingWhenStopping(() => draining) }, (req, res) => {
        void handle(req, res);
      });
      server = listening;
      listening.keepAliveTimeout = 5_000;
      await new Promise<void>((resolve, reject) => {
        listening.once('error', reject);
        listening.listen(config.port, config.host, () => resolve());
      });
      const port = (listening.address() as { port: number }).port;
      issuer ??= defaultIssuer(config.host, port);
      log(`tessera listening on ${issuer} (port ${port})`);
      // Said once, by the processes that serve the portal and the API: without it the missing passkey buttons are a riddle.
      const passkeysOff = passkeysUnavailableReason(base.settings.issuer());
      if (passkeysOff) log(passkeysOff);
    }
    // Said by the processes that send mail: an API process without SMTP_URL beside workers that have it sends none.
    if (!config.mail.smtpUrl && config.role !== 'api')
      log(
        `no SMTP_URL: mail is not sent but kept in the development mailbox, which platform admins read at ${base.settings.issuer()}/admin/settings/mail`,
      );

    if (config.metrics.port) {
      metricsServer = await startMetricsServer(base.metrics, config.metrics.port, config.metrics.host);
      log(`metrics on http://${config.metrics.host}:${(metricsServer.address() as { port: number }).port}/metrics`);
    } else if (config.metrics.token && !server) {
      logger.warn(
        'METRICS_TOKEN serves /metrics on the public port, which a worker has none of: set METRICS_PORT to scrape this process',
      );
    }

    let stopping: Promise<void> | undefined;
    const url = server ? `http://127.0.0.1:${(server.address() as { port: number }).port}` : '';
    return { url, config, base, logger, stop: () => (stopping ??= stop()) };
  } catch (error) {
    await stop().catch((err) => logger.error({ err }, 'could not stop what had started'));
    throw error;
  }
}
