// What every resolver and service receives: the database, the clock, the settings, who is calling and from
// where. Built once per request by createContext (server) or by tests.
import type { Db, Prisma } from './db.ts';
import type { Clock } from './lib/clock.ts';
import type { Role } from '../prisma/generated/client/enums.ts';
import type { KeyStore } from './keys/signing-keys.ts';
import type { WebhookSettings } from './push/destination.ts';
import type { RateLimitLeases } from './lib/rate-limit-leases.ts';
import type { Metrics } from './metrics/metrics.ts';

export type { Role };

export interface UserActor {
  kind: 'user';
  userId: string;
  sessionId: string;
  /** The organization the session currently acts in. */
  organizationId: string | null;
}
export interface ApiKeyActor {
  kind: 'apiKey';
  apiKeyId: string;
  organizationId: string;
  role: Role;
  createdById: string | null;
}
/** A user acting through an OAuth access token, within its client's organization. */
export interface OAuthActor {
  kind: 'oauth';
  userId: string | null;
  clientId: string;
  organizationId: string;
  scope: string[];
  grantId: string;
  /**
   * Tessera's own command-line client (cli-client.ts): the token acts in each of the person's organizations, not only
   * its client's, and an organization that requires a second factor admits it only when its sign-in used one (`amr`).
   */
  platformWide?: boolean;
  amr?: string[];
}
export type Actor = UserActor | ApiKeyActor | OAuthActor;

export interface RequestInfo {
  requestId: string;
  ip: string | null;
  userAgent: string | null;
  /** The device cookie the request carries, as sent: unverified (auth/device-cookie.ts checks it). */
  deviceCookie?: string | null;
}

export interface Settings {
  /** The issuer and public origin (BASE_URL). A function: without BASE_URL it is known only once bound. */
  issuer: () => string;
  secretKey: Uint8Array;
  production: boolean;
  /** Receiver time-out, private networks, extra CA (WEBHOOK_*); the interface's defaults when absent. */
  webhooks?: WebhookSettings;
  /** The most webhooks an organization may have (WEBHOOK_LIMIT_PER_ORGANIZATION); 20 when absent. */
  webhookLimitPerOrganization?: number;
  /** The resolvers that check domain ownership (DNS_SERVERS, e.g. 127.0.0.1:5353); the system's when absent. */
  dnsServers?: string[];
  /** AUDIT_TOKEN_ISSUANCE: an audit entry for every token issued; off when absent. */
  auditTokenIssuance?: boolean;
  /** METADATA_CLIENTS: client ID metadata documents may be used where an organization allows them; off when absent. */
  metadataClients?: boolean;
}

/**
 * An OAuth client as client authentication read it, with its row's version (xmin): a process remembers the clients
 * it authenticated, and the statement that uses one checks the version (docs/architecture.md#hot-paths).
 */
export type RememberedClient = Prisma.OAuthClientGetPayload<object> & { version: string };

/** The OAuth clients a process remembers (modules/oauth/remembered-clients.ts holds them). */
export interface ClientMemory {
  get(clientId: string): RememberedClient | undefined;
  remember(client: RememberedClient): void;
  forget(clientId: string): void;
}

/** What lives as long as the process: built once at start. */
export interface ContextBase {
  db: Db;
  clock: Clock;
  settings: Settings;
  keys: KeyStore;
  /** The process's leases on the shared rate-limit counters. */
  rateLimitLeases: RateLimitLeases;
  /** The OAuth clients the process has authenticated, confirmed by the statements that use them. */
  rememberedClients: ClientMemory;
  /** Its owners and admins are the platform administrators (null before the bootstrap). */
  operatorOrganizationId: () => Promise<string | null>;
  /** What is counted for /metrics (the no-op one when nobody scrapes). */
  metrics: Metrics;
}

/** One request's context: the base plus who is calling and from where. */
export interface Context extends ContextBase {
  actor: Actor | null;
  request: RequestInfo;
  /** Per-request memo of the caller's memberships (organization id -> role); see auth/access.ts. */
  cache: Map<string, unknown>;
}

export function makeContext(base: ContextBase, actor: Actor | null, request: RequestInfo): Context {
  return { ...base, actor, request, cache: new Map() };
}
