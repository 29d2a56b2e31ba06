// Configuration from the environment, validated once at start. Every default is documented here and in the
// README's configuration table; a bad value stops the process with a message that says how to fix it.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isIP } from 'node:net';
import { z } from 'zod';
import type { MailSettings } from '../schema/modules/mail/transport.ts';
import { DEFAULT_RATE_LIMITS, type RateLimitSettings } from '../schema/limits/rate-limits.ts';
import { expected } from '../schema/lib/expected.ts';
import { DEFAULT_RETENTION, type Retention } from '../schema/maintenance/cleanup.ts';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'use true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Days of history kept (docs/architecture.md#bounded-storage): a whole number from 1 to 36,500. */
const days = (fallback: number) =>
  z.coerce
    .number({ message: 'must be a number of days' })
    .int('must be a whole number of days')
    .min(1)
    .max(36_500)
    .default(fallback);

const env = z.object({
  PORT: z.coerce.number({ message: 'must be a number' }).int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  BASE_URL: z.url({ message: 'must be an absolute http(s) URL such as https://id.example.com' }).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgresql:// URL (leave it unset to use the embedded PostgreSQL)')
    .optional(),
  // A direct (or session-mode) connection for what a transaction-mode pooler cannot carry: the worker's LISTEN and
  // its session, and the migrations' advisory lock (docs/architecture.md#behind-a-connection-pooler).
  WORKER_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgresql:// URL straight to PostgreSQL (or a session-mode pooler)')
    .optional(),
  DATABASE_PREPARED_STATEMENTS: bool.default(true),
  DATA_DIR: z.string().default('./data'),
  // 32 bytes as 64 hex characters or base64url; wraps signing keys and webhook secrets at rest.
  SECRET_KEY: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  // A PEM file of CA certificates trusted for webhook receivers beside Node's own roots (a private CA).
  WEBHOOK_CA_FILE: z.string().optional(),
  // Every event goes to each webhook of its organization: the limit bounds the requests one change sends out.
  WEBHOOK_LIMIT_PER_ORGANIZATION: z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(1)
    .max(10_000)
    .default(20),
  RATE_LIMIT_API_KEY_PER_MINUTE: z.coerce
    .number({ message: 'must be a number' })
    .int()
    .min(1)
    .default(DEFAULT_RATE_LIMITS.apiKeyPerMinute),
  RATE_LIMIT_ORGANIZATION_PER_HOUR: z.coerce
    .number({ message: 'must be a number' })
    .int()
    .min(1)
    .default(DEFAULT_RATE_LIMITS.organizationPerHour),
  // A directory's SCIM token, apart from the API's limits (schema/limits/rate-limits.ts says why 6,000).
  SCIM_RATE_LIMIT_PER_MINUTE: z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(1)
    .default(DEFAULT_RATE_LIMITS.scimTokenPerMinute),
  // Outgoing mail (docs/architecture.md#mail). Without SMTP_URL mail stays in the development mailbox.
  SMTP_URL: z
    .string()
    .regex(
      /^smtps?:\/\/[^\s]+$/,
      'must be an smtp:// or smtps:// URL, credentials in it (smtps://user:password@smtp.example.com)',
    )
    .optional(),
  MAIL_FROM: z
    .string()
    .max(320)
    .regex(/^[^\r\n]+$/, 'must be one line, such as Tessera <no-reply@example.com>')
    .optional(),
  // /metrics (docs/architecture.md#metrics): on the public port only with a bearer token, or on a port of its own.
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters (openssl rand -hex 32)').optional(),
  METRICS_PORT: z.coerce.number({ message: 'must be a number' }).int().min(1).max(65535).optional(),
  METRICS_HOST: z.string().default('127.0.0.1'),
  // Resolvers for the DNS checks of verified domains (docs/architecture.md#single-sign-on); unset: the system's.
  DNS_SERVERS: z.string().optional(),
  TRUST_PROXY: bool.default(false),
  EVENT_RETENTION_DAYS: days(DEFAULT_RETENTION.events),
  MAIL_RETENTION_DAYS: days(DEFAULT_RETENTION.mail),
  AUDIT_RETENTION_DAYS: days(DEFAULT_RETENTION.audit),
  // An audit entry for every token the token endpoint issues (docs/architecture.md#hot-paths): off, since refreshes
  // alone write one per user per hour and drown the audit page; grants, consents, revocations, replays and failures
  // are audited either way.
  AUDIT_TOKEN_ISSUANCE: bool.default(false),
  // Client ID metadata documents (docs/architecture.md#apps-without-secrets): on, for the organizations that allow
  // them; off forbids them on the whole platform.
  METADATA_CLIENTS: z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
  ROLE: z.enum(['all', 'api', 'worker'], { message: 'must be all, api or worker' }).default('all'),
  NODE_ENV: z.string().default('development'),
  BOOTSTRAP_ADMIN_EMAIL: z.email({ message: 'must be an e-mail address' }).optional(),
  BOOTSTRAP_ADMIN_PASSWORD: z.string().min(12, 'must be at least 12 characters').optional(),
  BOOTSTRAP_ORG_NAME: z.string().min(1).max(200).default('Operator'),
});

export interface Config {
  port: number;
  host: string;
  /** The issuer and the public origin; without BASE_URL it follows the port actually bound. */
  baseUrl: string | undefined;
  databaseUrl: string | undefined;
  /** WORKER_DATABASE_URL: the worker's and the migrations' connection; DATABASE_URL's when unset. */
  workerDatabaseUrl: string | undefined;
  /** DATABASE_PREPARED_STATEMENTS: false behind a transaction-mode pooler that keeps no prepared statements. */
  preparedStatements: boolean;
  dataDir: string;
  secretKey: Uint8Array;
  logLevel: string;
  webhookTimeoutMs: number;
  webhookAllowPrivateNetworks: boolean;
  /** The PEM text of WEBHOOK_CA_FILE. */
  webhookCa: string | undefined;
  auditTokenIssuance: boolean;
  metadataClients: boolean;
  webhookLimitPerOrganization: number;
  role: 'all' | 'api' | 'worker';
  mail: MailSettings;
  /** Counted and served only when one of token or port is set. */
  metrics: { token: string | undefined; port: number | undefined; host: string };
  rateLimits: RateLimitSettings;
  /** How long the cleanup keeps events, mail and the audit log. */
  retention: Retention;
  /** Behind a load balancer: the client address and protocol come from X-Forwarded-*. */
  trustProxy: boolean;
  /** DNS_SERVERS: the resolvers that check domain ownership, as node:dns setServers takes them; the system's when absent. */
  dnsServers: string[] | undefined;
  production: boolean;
  bootstrap: { email: string; password: string; orgName: string } | undefined;
}

export class ConfigError extends Error {}

function decodeKey(value: string): Uint8Array {
  const bytes = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64url');
  if (bytes.length !== 32) {
    throw new ConfigError('SECRET_KEY must be 32 random bytes, as 64 hex characters (openssl rand -hex 32)');
  }
  return bytes;
}

/** Reads SECRET_KEY, or the one generated into DATA_DIR on first start. */
async function loadSecretKey(value: string | undefined, dataDir: string): Promise<Uint8Array> {
  if (value) return decodeKey(value);
  const file = path.resolve(dataDir, 'secret.key');
  const stored = await readFile(file, 'utf8').catch(() => null);
  if (stored) return decodeKey(stored.trim());
  const fresh = randomBytes(32).toString('hex');
  try {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, fresh, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // EEXIST: another process wrote it first, use theirs. Anything else (a read-only DATA_DIR) stops the start.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST')
      throw new ConfigError(`cannot create ${file} (${code}): make DATA_DIR writable, or set SECRET_KEY`);
  }
  return decodeKey((await readFile(file, 'utf8')).trim());
}

const DNS_SERVER_FORMS = 'an IP address with an optional port: 1.1.1.1, 127.0.0.1:5353, ::1 or [::1]:53';

/** One DNS_SERVERS entry, checked here because node:dns would throw on the first lookup instead of at start. */
function dnsServer(entry: string): string {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  const withPort = /^([^:]+):(\d+)$/.exec(entry);
  const [address, port] = bracketed
    ? [expected(bracketed[1], 'the bracketed address'), bracketed[2]]
    : withPort
      ? [expected(withPort[1], 'the address before the port'), withPort[2]]
      : [entry, undefined];
  const family = isIP(address);
  // A port follows IPv4 after a colon (1.1.1.1:53) and IPv6 only in brackets ([::1]:53), as node:dns setServers reads them.
  const fits = bracketed ? family === 6 : withPort ? family === 4 : family !== 0;
  if (!fits || (port !== undefined && (Number(port) < 1 || Number(port) > 65535))) {
    throw new ConfigError(`DNS_SERVERS: ${JSON.stringify(entry)} is not ${DNS_SERVER_FORMS}`);
  }
  return entry;
}

function dnsServers(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const entries = value.split(',').map((s) => s.trim());
  if (entries.some((s) => s === ''))
    throw new ConfigError(`DNS_SERVERS: separate the servers with single commas, each ${DNS_SERVER_FORMS}`);
  return entries.map(dnsServer);
}

async function readCaFile(file: string): Promise<string> {
  const pem = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new ConfigError(`WEBHOOK_CA_FILE: cannot read ${file} (${error.code})`);
  });
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw new ConfigError(`WEBHOOK_CA_FILE: ${file} holds no PEM certificate`);
  return pem;
}

export async function loadConfig(source: NodeJS.ProcessEnv = process.env): Promise<Config> {
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== ''));
  const parsed = env.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  if (e.WORKER_DATABASE_URL && !e.DATABASE_URL) {
    throw new ConfigError('WORKER_DATABASE_URL goes with DATABASE_URL: the embedded PostgreSQL needs neither');
  }
  if (Boolean(e.BOOTSTRAP_ADMIN_EMAIL) !== Boolean(e.BOOTSTRAP_ADMIN_PASSWORD)) {
    throw new ConfigError('set both BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD, or neither');
  }
  return {
    port: e.PORT,
    host: e.HOST,
    baseUrl: e.BASE_URL?.replace(/\/+$/, ''),
    databaseUrl: e.DATABASE_URL,
    workerDatabaseUrl: e.WORKER_DATABASE_URL,
    preparedStatements: e.DATABASE_PREPARED_STATEMENTS,
    dataDir: path.resolve(e.DATA_DIR),
    secretKey: await loadSecretKey(e.SECRET_KEY, e.DATA_DIR),
    logLevel: e.LOG_LEVEL,
    webhookTimeoutMs: e.WEBHOOK_TIMEOUT_MS,
    webhookAllowPrivateNetworks: e.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    webhookCa: e.WEBHOOK_CA_FILE ? await readCaFile(e.WEBHOOK_CA_FILE) : undefined,
    webhookLimitPerOrganization: e.WEBHOOK_LIMIT_PER_ORGANIZATION,
    auditTokenIssuance: e.AUDIT_TOKEN_ISSUANCE,
    metadataClients: e.METADATA_CLIENTS === 'on',
    role: e.ROLE,
    mail: { smtpUrl: e.SMTP_URL, from: e.MAIL_FROM },
    metrics: { token: e.METRICS_TOKEN, port: e.METRICS_PORT, host: e.METRICS_HOST },
    trustProxy: e.TRUST_PROXY,
    dnsServers: dnsServers(e.DNS_SERVERS),
    rateLimits: {
      apiKeyPerMinute: e.RATE_LIMIT_API_KEY_PER_MINUTE,
      organizationPerHour: e.RATE_LIMIT_ORGANIZATION_PER_HOUR,
      scimTokenPerMinute: e.SCIM_RATE_LIMIT_PER_MINUTE,
    },
    retention: { events: e.EVENT_RETENTION_DAYS, mail: e.MAIL_RETENTION_DAYS, audit: e.AUDIT_RETENTION_DAYS },
    production: e.NODE_ENV === 'production',
    bootstrap:
      e.BOOTSTRAP_ADMIN_EMAIL && e.BOOTSTRAP_ADMIN_PASSWORD
        ? { email: e.BOOTSTRAP_ADMIN_EMAIL, password: e.BOOTSTRAP_ADMIN_PASSWORD, orgName: e.BOOTSTRAP_ORG_NAME }
        : undefined,
  };
}
