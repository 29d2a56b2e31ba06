// The authorization endpoint's one read (issue 7: authorize with a session in at most 3 statements): the client,
// the browser's live session (with its user's session version), the membership in the client's organization
// and the remembered consent, in a single statement. The steps that follow decide on this row alone. The
// product scopes asked for are looked up in the same statement: which of them the user holds a license of in the
// client's organization (product-scopes.ts), for require-licenses. A client known by its metadata document
// (clients/metadata-document.ts) belongs to no customer: the organization it acts in is the one the session acts in,
// read in a composition of its own, with whether that organization allows such clients, and the resources (RFC 8707)
// it may ask for: those the clients of that organization, and of the operator's, are registered for.
import type { Context } from '../../../context.ts';
import { hotStatement, Prisma } from '../../../db.ts';
import { sha256 } from '../../../lib/crypto.ts';
import { SESSION_TOKEN_PREFIX } from '../../sessions/sessions.service.ts';
import { licensed, productScopesOf } from '../product-scopes.ts';
import { parseScope } from '../scopes.ts';
import { isMetadataClientId } from '../../clients/metadata-document.ts';
import type { AuthorizeClient, BrowserSession } from './request.ts';

export interface Loaded {
  client: AuthorizeClient | null;
  session: BrowserSession | null;
  /** Whether the session's user belongs to the client's organization. */
  member: boolean;
  /** The scopes the user has already allowed this client, or null when never asked. */
  consentScopes: string[] | null;
  /** Of the product scopes asked for, those the session's user holds a license of in the client's organization. */
  licensed: string[];
  /** The client's organization requires a second factor (docs/architecture.md#second-factors). */
  requireMfa: boolean;
  /** The session's user has a second factor to sign in with. */
  hasFactor: boolean;
  /** For a metadata document's client: the organization the session acts in allows such clients. */
  metadataAllowed: boolean;
}

type Row = Omit<AuthorizeClient, 'id' | 'organizationId'> & {
  id: string | null;
  organizationId: string | null;
  metadataAllowed: boolean | null;
  member: boolean;
  consentScopes: string[] | null;
  licensed: string[];
  requireMfa: boolean | null;
  hasFactor: boolean | null;
} & SessionColumns;

/** The session's columns come from one LEFT JOIN: all there when a live session was found, all null otherwise. */
type SessionColumns =
  | { sessionId: string; userId: string; authTime: Date; amr: string[]; sessionVersion: number }
  | { sessionId: null; userId: null; authTime: null; amr: null; sessionVersion: null };

/** What findEnabledClient and findLiveSession accept, checked before anything reaches the database. */
const plausibleClientId = (v: string | undefined) => (v && v.length <= 200 ? v : null);
const plausibleSession = (v: string | null) =>
  v && v.startsWith(SESSION_TOKEN_PREFIX) && v.length <= 200 ? sha256(v) : null;

/** The product scopes of the scope parameter, bounded (check-scope refuses any the client does not allow). */
const askedProducts = (scope: string | undefined) =>
  scope && scope.length <= 4096 ? productScopesOf(parseScope(scope)).slice(0, 100) : [];

type LoadParams = { clientId: string | null; sessionHash: string | null; now: Date; asked: string[] };

/**
 * The read, composed once (db.ts hotStatement): the client id, the session's hash, the time and the product scopes
 * asked for are its parameters. Without product scopes asked, a second composition leaves the license lookup out:
 * PostgreSQL sets up and locks every relation a plan names on each execution, even where nothing is looked up.
 * `metadata` composes the read of a metadata document's client, which acts in the session's organization.
 */
const load = (products: boolean, metadata: boolean) => {
  const org = metadata ? Prisma.sql`s.organization_id` : Prisma.sql`c.organization_id`;
  const resources = metadata
    ? Prisma.sql`ARRAY(SELECT DISTINCT r FROM oauth_clients rc CROSS JOIN unnest(rc.resources) AS r
        WHERE rc.enabled AND (rc.organization_id = ${org}
          OR rc.organization_id IN (SELECT o.id FROM organizations o WHERE o.is_operator)))`
    : Prisma.sql`c.resources`;
  return hotStatement<LoadParams, Row>(
    (p) => Prisma.sql`
    SELECT c.id, c.client_id AS "clientId", ${org} AS "organizationId", c.name, c.enabled,
           c.redirect_uris AS "redirectUris", c.allowed_scopes AS "allowedScopes", c.grant_types AS "grantTypes",
           c.consent_required AS "consentRequired", c.token_endpoint_auth_method AS "tokenEndpointAuthMethod",
           c.metadata_document AS "metadataDocument", ${resources} AS resources,
           s.id AS "sessionId", s.user_id AS "userId", s.auth_time AS "authTime", s.amr, s.session_version AS "sessionVersion",
           (m.id IS NOT NULL) AS member, k.scopes AS "consentScopes",
           (SELECT o.require_mfa FROM organizations o WHERE o.id = ${org}) AS "requireMfa",
           ${metadata ? Prisma.sql`(SELECT o.allow_metadata_clients FROM organizations o WHERE o.id = ${org})` : Prisma.sql`false`} AS "metadataAllowed",
           (s.id IS NOT NULL AND (EXISTS (SELECT 1 FROM totp_factors t WHERE t.user_id = s.user_id AND t.confirmed_at IS NOT NULL)
                                  OR EXISTS (SELECT 1 FROM passkeys pk WHERE pk.user_id = s.user_id))) AS "hasFactor",
           ${
             products
               ? Prisma.sql`ARRAY(SELECT p.slug FROM products p WHERE p.slug = ANY(${p.asked}::text[]) AND ${licensed(Prisma.sql`s.user_id`, org, p.now)})`
               : Prisma.sql`ARRAY[]::text[]`
           } AS licensed
    FROM (SELECT 1) AS one
    LEFT JOIN oauth_clients c ON c.client_id = ${p.clientId}::text${metadata ? Prisma.sql` AND c.metadata_document` : Prisma.empty}
    LEFT JOIN sessions s ON s.token_hash = ${p.sessionHash}::text AND s.revoked_at IS NULL
      AND s.expires_at > ${p.now}::timestamp(3)
      AND s.session_version = (SELECT u.session_version FROM users u WHERE u.id = s.user_id)
    LEFT JOIN memberships m ON m.user_id = s.user_id AND m.organization_id = ${org}
    LEFT JOIN oauth_consents k ON k.user_id = s.user_id AND k.client_id = c.id`,
  );
};
const LOADS = {
  registered: { plain: load(false, false), withProducts: load(true, false) },
  metadata: { plain: load(false, true), withProducts: load(true, true) },
};

export async function loadAuthorization(
  ctx: Context,
  clientId: string | undefined,
  sessionToken: string | null,
  scope: string | undefined,
): Promise<Loaded> {
  const asked = askedProducts(scope);
  const statement =
    LOADS[isMetadataClientId(clientId) ? 'metadata' : 'registered'][asked.length ? 'withProducts' : 'plain'];
  const [row] = await statement(ctx.db, {
    clientId: plausibleClientId(clientId),
    sessionHash: plausibleSession(sessionToken),
    now: ctx.clock.now(),
    asked,
  });
  // The read is FROM (SELECT 1): it answers one row whatever it finds.
  if (!row) throw new Error('loadAuthorization: the read answered no row');
  return {
    client: row.id
      ? {
          id: row.id,
          clientId: row.clientId,
          // A metadata document's client acts in no organization until a session names one; the step that admits
          // it (require-metadata-allowed.ts) refuses before anything is written for it.
          organizationId: row.organizationId ?? '',
          name: row.name,
          enabled: row.enabled,
          redirectUris: row.redirectUris,
          allowedScopes: row.allowedScopes,
          grantTypes: row.grantTypes,
          consentRequired: row.consentRequired,
          tokenEndpointAuthMethod: row.tokenEndpointAuthMethod,
          metadataDocument: row.metadataDocument,
          resources: row.resources,
        }
      : null,
    session: row.sessionId
      ? {
          sessionId: row.sessionId,
          userId: row.userId,
          authTime: row.authTime,
          amr: row.amr,
          sessionVersion: row.sessionVersion,
        }
      : null,
    member: row.member,
    consentScopes: row.consentScopes,
    licensed: row.licensed,
    requireMfa: row.requireMfa === true,
    hasFactor: row.hasFactor === true,
    metadataAllowed: row.metadataAllowed === true,
  };
}
