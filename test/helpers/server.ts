// Starts the whole service, exactly as `npm start` does but on a free port, against a fresh database.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { pino, type Logger } from 'pino';
import { startTessera, type Running } from '../../server/start.ts';
import type { Clock } from '../../schema/lib/clock.ts';
import { createTestDatabase } from './db.ts';
import type { HostResolver } from '../../schema/push/destination.ts';

export interface TestServer extends Running {
  databaseUrl: string;
}

export interface TestServerOptions {
  bootstrap?: { email: string; password: string; orgName?: string };
  clock?: Clock;
  role?: 'all' | 'api' | 'worker';
  env?: Record<string, string>;
  /** Connections in the service's database pool (DATABASE_URL's connection_limit); 10 when not given. */
  poolSize?: number;
  /** Serve from this database instead of a fresh copy of the template (which it then neither makes nor drops). */
  databaseUrl?: string;
  /** The service's logger, for a test that checks what is logged; kept in `recentServerLog` when not given. */
  logger?: Logger;
  /** Resolves webhook receivers' host names instead of DNS. */
  webhookResolver?: HostResolver;
}

/**
 * The last lines the file's test servers logged (info and up), when a test gives no logger of its own: a failed
 * browser test prints the requests the service saw next to what the browser saw (browser.ts).
 */
export const recentServerLog: string[] = [];
const KEPT_LINES = 200;
/** TEST_LOG_LEVEL prints the service's log as it goes instead. */
const testLogger = () =>
  process.env.TEST_LOG_LEVEL
    ? pino({ level: process.env.TEST_LOG_LEVEL })
    : pino(
        { level: 'info' },
        {
          write(line: string) {
            if (recentServerLog.push(line.trimEnd()) > KEPT_LINES) recentServerLog.shift();
          },
        },
      );

/** Each running test service's database, by its URL: its outgoing mail is the invitees' mailboxes (fixtures.ts). */
const mailboxes = new Map<string, Running['base']['db']>();

/** The database of the test service at `baseUrl`, if startTestServer started it. */
export const databaseOf = (baseUrl: string) => mailboxes.get(baseUrl);

export const ADMIN = { email: 'admin@tessera.test', password: 'correct horse battery staple' };

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.databaseUrl
    ? { url: options.databaseUrl, drop: async () => {} }
    : await createTestDatabase();
  const url = new URL(database.url);
  if (options.poolSize) url.searchParams.set('connection_limit', String(options.poolSize));
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tessera-test-'));
  const bootstrap: NonNullable<TestServerOptions['bootstrap']> = options.bootstrap ?? ADMIN;
  const running = await startTessera({
    env: {
      DATABASE_URL: url.toString(),
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      SECRET_KEY: randomBytes(32).toString('hex'),
      ROLE: options.role ?? 'api',
      LOG_LEVEL: 'silent',
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      // Test files send many requests as one organization; the rate-limit test sets the interface's values.
      RATE_LIMIT_API_KEY_PER_MINUTE: '100000',
      RATE_LIMIT_ORGANIZATION_PER_HOUR: '100000',
      BOOTSTRAP_ADMIN_EMAIL: bootstrap.email,
      BOOTSTRAP_ADMIN_PASSWORD: bootstrap.password,
      BOOTSTRAP_ORG_NAME: bootstrap.orgName ?? 'Operator',
      ...options.env,
    },
    clock: options.clock,
    webhookResolver: options.webhookResolver,
    logger: options.logger ?? testLogger(),
  });
  mailboxes.set(running.url, running.base.db);
  return {
    ...running,
    databaseUrl: database.url,
    async stop() {
      mailboxes.delete(running.url);
      await running.stop();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
