// What the token endpoint's statements share; each grant's own statement sits beside its handler
// (authorization-code.ts, refresh-token.ts, client-credentials.ts). One SQL statement a request
// (docs/architecture.md#hot-paths): redeeming a code or a refresh token consumes it with a conditional UPDATE ...
// RETURNING, checks in the same statement that the grant stands, that the user's session version has not moved and
// that the user is still a member of the grant's organization, and only then stores the next refresh token, the
// oauth.token.issued event (when a webhook wants it) and the audit entry (with AUDIT_TOKEN_ISSUANCE) and touches the
// consent's last use (at most once a minute). A redemption that fails those checks ends the grant in the same statement. No interactive
// transaction, and nothing is signed while a statement runs. Both redeeming statements are composed once (db.ts
// hotStatement): every value of the request, down to the ids and the time, travels as a parameter.
// The same statement drops the product scopes whose license the user no longer holds (product-scopes.ts), from
// the tokens issued and from the refresh token stored, and reads the licensed products the ID token shows.
// Each grant's statement is read whole, in each of its compositions, in the .sql file beside it (authorization-code.sql,
// refresh-token.sql), which test/oauth/token-statements.test.ts keeps in step with what this file composes.
import type { Context } from '../../../context.ts';
import { hotStatement, Prisma, readableStatement, type Placeholders } from '../../../db.ts';
import { uuidv7 } from '../../../lib/ids.ts';
import { sqlTimestamp as ts } from '../../../lib/sql-value.ts';
import { auditRowCte, auditStamp, type AuditRow, type AuditStamp } from '../../audit/audit-sql.ts';
import { eventRowCte } from '../../../events/event-sql.ts';
import { CLAIM_COLUMNS, type ClaimSource } from '../claims.service.ts';
import { revealedProducts, withoutLostLicenses } from '../product-scopes.ts';
import { STANDARD_SCOPES } from '../scopes.ts';

const sql = Prisma.sql;
const LAST_USED_GRANULARITY = Prisma.raw(`interval '1 minute'`);

/** The client as the statements need it: its row id, public client_id and organization. */
export interface StatementClient {
  id: string;
  clientId: string;
  organizationId: string;
}

/** The client of a redemption, with the version of its row that client authentication read (remembered-clients.ts). */
export interface RedeemingClient extends StatementClient {
  version: string;
  allowedScopes: string[];
  tokenEndpointAuthMethod: string;
  /** Tessera's own command-line client, whose tokens need no membership of its organization (cli-client.ts). */
  platformWide: boolean;
}

/** SQL: the client's row is still the version it was authenticated against (else nothing is redeemed). */
export const clientUnchanged = (p: IssueValues) =>
  sql`exists (select 1 from oauth_clients oc where oc.id = ${p.clientRowId}::text and oc.xmin = ${p.clientVersion}::xid)`;

/** A redeemed code or refresh token: the subject, the outcome of each check, and the claims. */
export interface Redeemed extends ClaimSource {
  grant_id: string;
  /** The scope issued now: the refresh's narrower one, or all the consumed row kept. */
  scope: string;
  /** The scope the next refresh token keeps: the consumed row's, whatever was asked (RFC 6749 6). */
  refresh_scope: string;
  /** The consumed row's resources (RFC 8707), which the next refresh token keeps whatever a request narrowed. */
  resources: string[];
  nonce: string | null;
  auth_time: Date;
  amr: string[];
  session_version: number;
  redirect_ok: boolean;
  has_challenge: boolean;
  pkce_ok: boolean;
  grant_live: boolean;
  session_current: boolean;
  member: boolean;
}

/** The refresh token to store when the checks pass (its value is made, and hashed, before the statement). */
export interface NextRefresh {
  hash: string;
  expiresAt: Date;
}

/**
 * The values of a redeeming statement besides the grant's own: what the request made (the next refresh token, the
 * ids of the rows it may write) and who asks. While the statement is composed they are placeholders.
 */
export interface IssueValues {
  now: Date;
  clientRowId: string;
  clientPublicId: string;
  clientVersion: string;
  refreshId: string;
  refreshHash: string | null;
  refreshExpiresAt: Date;
  issuesRefresh: boolean;
  /** A public client gets a refresh token only for a grant that holds offline_access (refreshIssued). */
  refreshNeedsOffline: boolean;
  /** The client is platform-wide: its grant's person need not be a member of the grant's organization. */
  platformWide: boolean;
  eventId: string;
  auditId: string | null;
  ip: string | null;
  userAgent: string | null;
}

export function issueValues(ctx: Context, client: RedeemingClient, next: NextRefresh | null): IssueValues {
  const now = ctx.clock.now();
  return {
    now,
    clientRowId: client.id,
    clientPublicId: client.clientId,
    clientVersion: client.version,
    refreshId: uuidv7(),
    refreshHash: next?.hash ?? null,
    refreshExpiresAt: next?.expiresAt ?? now,
    issuesRefresh: next !== null,
    refreshNeedsOffline: client.tokenEndpointAuthMethod === 'none',
    platformWide: client.platformWide,
    eventId: uuidv7(),
    auditId: ctx.settings.auditTokenIssuance ? uuidv7() : null,
    ip: ctx.request.ip,
    userAgent: ctx.request.userAgent?.slice(0, 500) ?? null,
  };
}

/** The scopes whose tokens no license changes: the standard ones but `organization`, which shows every license. */
const PLAIN_SCOPES = Object.keys(STANDARD_SCOPES).filter((s) => s !== 'organization');

/** Whether every scope a client may be granted is plain (PLAIN_SCOPES): its tokens need no license looked up. */
const plainClient = (client: RedeemingClient) => client.allowedScopes.every((s) => PLAIN_SCOPES.includes(s));

/** How a redeeming statement is composed: with the audit row, and with the license lookups (`products`). */
export interface Composition {
  audit: boolean;
  products: boolean;
}

/**
 * SQL over the consumed row's `scope` column: true when the statement may redeem it as composed. Without the license
 * lookups, only a token whose scopes are all plain.
 */
export const redeemable = (how: Composition): Prisma.Sql =>
  how.products ? sql`true` : sql`string_to_array(scope, ' ') <@ ${PLAIN_SCOPES}::text[]`;

/**
 * A redeeming statement, composed once for each AUDIT_TOKEN_ISSUANCE setting (one process serves one setting;
 * tests run servers of both), with and without the license lookups. `build` gets the placeholders and the
 * composition. PostgreSQL sets up and locks every relation of a plan on each execution, even a lookup no row
 * reaches: a client that may be granted plain scopes only is served without them. A token of such a client that
 * still names a product or `organization` (granted before its scopes were narrowed) is left alone by that statement
 * (redeemable) and redeemed by the full one, on the last try: for a remembered client a miss is tried again anyway,
 * after a fresh read (grant.ts), so a guess costs no more statements than before.
 */
export function redeemingStatement<P extends object>(
  build: (p: Placeholders<P & IssueValues>, how: Composition) => Prisma.Sql,
) {
  const compose = (how: Composition) => hotStatement<P & IssueValues, Redeemed>((p) => build(p, how));
  const composeBoth = (audit: boolean) => ({
    plain: compose({ audit, products: false }),
    full: compose({ audit, products: true }),
  });
  const unaudited = composeBoth(false);
  const audited = composeBoth(true);
  const redeem = async (
    ctx: Context,
    client: RedeemingClient,
    params: P & IssueValues,
    lastTry: boolean,
  ): Promise<Redeemed | null> => {
    const { plain, full } = ctx.settings.auditTokenIssuance ? audited : unaudited;
    if (plainClient(client)) {
      const [row] = await plain(ctx.db, params);
      if (row || !lastTry) return row ?? null;
    }
    const [row] = await full(ctx.db, params);
    return row ?? null;
  };
  // Each composition as a reader sees it, for its reviewed snapshot beside the grant (test/oauth/token-statements.test.ts).
  return Object.assign(redeem, {
    readable: (how: Composition) => readableStatement<P & IssueValues>((p) => build(p, how)),
  });
}

/**
 * The CTEs after `subject` (one row per redeemed token, with the check columns and ClaimSource): `issued` is the
 * subject when every check passed; it gets the next refresh token, the event, the audit entry and the consent
 * touch. A grant whose user signed out everywhere or left the organization is ended, with its refresh tokens.
 */
export function issueAndEnd(
  p: IssueValues,
  grantType: 'authorization_code' | 'refresh_token' | 'urn:ietf:params:oauth:grant-type:device_code',
  { audit }: Composition,
) {
  const now = sql`${p.now}::timestamp(3)`;
  const event = eventRowCte({ id: p.eventId, at: p.now }, 'event', 'issued', {
    kind: 'oauth.token.issued',
    organizationId: sql`issued.organization_id`,
    facts: {
      client: { id: sql`${p.clientRowId}::text`, clientId: sql`${p.clientPublicId}::text` },
      user: { id: sql`issued.user_id` },
      scope: sql`issued.scope`,
      grantType,
    },
  });
  const auditRow = audit
    ? sql`, ${auditRowCte(issuedAuditStamp(p), 'audit', 'issued', {
        action: 'oauth.token.issue',
        organizationId: sql`issued.organization_id`,
        actorType: 'user',
        actorId: sql`issued.user_id`,
        targetType: 'oauth_client',
        targetId: sql`${p.clientRowId}::text`,
        details: sql`jsonb_build_object('kind', 'user', 'scope', issued.scope)`,
      })}`
    : Prisma.empty;
  return sql`
    , issued as (
      select * from subject where redirect_ok and pkce_ok and grant_live and session_current and member
    ), next_refresh as (
      insert into refresh_tokens (id, token_hash, grant_id, client_id, user_id, organization_id, scope, resources, auth_time, amr, session_version, expires_at, created_at)
      select ${p.refreshId}::text, ${p.refreshHash}::text, grant_id, ${p.clientRowId}::text, user_id, organization_id, refresh_scope, resources, auth_time, amr,
             session_version, ${p.refreshExpiresAt}::timestamp(3), ${now}
      from issued where ${p.issuesRefresh}::boolean
        and (not ${p.refreshNeedsOffline}::boolean or 'offline_access' = any(string_to_array(refresh_scope, ' ')))
    ), ${event}${auditRow}, touched as (
      update oauth_consents set last_used_at = ${now}
      where user_id = (select user_id from issued) and client_id = ${p.clientRowId}::text
        and (last_used_at is null or last_used_at < ${now} - ${LAST_USED_GRANULARITY})
    ), ended_grant as (
      update oauth_grants set revoked_at = ${now}
      where id = (select grant_id from subject where grant_live and not (session_current and member))
    ), ended_tokens as (
      update refresh_tokens set revoked_at = ${now}
      where grant_id = (select grant_id from subject where grant_live and not (session_current and member)) and revoked_at is null
    )
    select * from subject`;
}

/**
 * Whether the statement stored the next refresh token (issueAndEnd's next_refresh): made for this response, and, for
 * a public client, the grant holds offline_access (docs/architecture.md#apps-without-secrets).
 */
export function refreshIssued(client: RedeemingClient, next: NextRefresh | null, redeemed: Redeemed): boolean {
  if (next === null) return false;
  return client.tokenEndpointAuthMethod !== 'none' || redeemed.refresh_scope.split(' ').includes('offline_access');
}

/** The stamp of the audit row an audited composition writes; issueValues gives it an id when it audits. */
function issuedAuditStamp(p: IssueValues): AuditStamp {
  if (p.auditId === null) throw new Error('an audited redemption needs an audit id (issueValues)');
  return { id: p.auditId, ip: p.ip, userAgent: p.userAgent, at: p.now };
}

/**
 * `, audit AS (...)` for a token issued to a machine client, when the operator asks for one (AUDIT_TOKEN_ISSUANCE);
 * nothing otherwise. Refreshes alone would write one per user per hour (docs/architecture.md#hot-paths).
 */
export function tokenIssuanceAudit(ctx: Context, from: string, row: AuditRow): Prisma.Sql {
  return ctx.settings.auditTokenIssuance ? sql`, ${auditRowCte(auditStamp(ctx), 'audit', from, row)}` : Prisma.empty;
}

/**
 * The rows a redemption's subject is read from, over the consumed row `c`, with two scopes: `k.scope`, what the
 * consumed row keeps, and `i.scope`, what this response's tokens get: `issued`, an expression over k.scope (all of it
 * for a code; a refresh's narrower one, refresh-token.ts). With the license lookups k.scope is without the product
 * scopes whose license is gone (product-scopes.ts); without them the scope is plain (redeemable) and stays as it is.
 */
export function subjectFrom(
  now: Date,
  { products: lookups }: Composition,
  issued: Prisma.Sql = sql`k.scope`,
): Prisma.Sql {
  const kept = lookups ? withoutLostLicenses(sql`c.scope`, sql`c.user_id`, sql`c.organization_id`, now) : sql`c.scope`;
  return sql`
  from consumed c
  cross join lateral (select ${kept} as scope) k
  cross join lateral (select ${issued} as scope) i
  join oauth_grants g on g.id = c.grant_id
  left join users u on u.id = c.user_id
  left join organizations o on o.id = c.organization_id
  left join memberships m on m.user_id = c.user_id and m.organization_id = c.organization_id`;
}

/**
 * The scopes, checks and claims shared by both redemptions, over subjectFrom's rows. The tokens get i.scope, and
 * show the products of it; the next refresh token keeps k.scope whatever was asked (RFC 6749 6: "identical to that
 * of the refresh token included").
 */
export function subjectColumns(p: IssueValues, how: Composition): Prisma.Sql {
  const now = p.now;
  const words = sql`string_to_array(i.scope, ' ')`;
  const products = how.products
    ? revealedProducts(
        { all: sql`'organization' = any(${words})`, slugs: words },
        sql`c.user_id`,
        sql`c.organization_id`,
        now,
      )
    : sql`null::jsonb`;
  return sql`i.scope, k.scope as refresh_scope, c.resources,
    g.revoked_at is null as grant_live,
    coalesce(u.session_version = c.session_version, false) as session_current,
    (m.role is not null or ${p.platformWide}::boolean) as member,
    c.user_id, c.organization_id, ${Prisma.raw(CLAIM_COLUMNS)}, ${products} as products`;
}

/** What a refused token request asked beyond the code or refresh token: its scope (refresh only), its resources. */
export interface Asked {
  scope?: string[];
  resources: string[];
}

/**
 * A code or refresh token that could not be consumed: if it was already used by this client it is a replay, and
 * the whole grant ends (OAuth 2.0 Security BCP 4.13, 4.14) with an audit entry. Says what was found, and whether it
 * was left unspent only because the request asked beyond its scope or its resources (the consuming statement refuses
 * that before it spends anything, RFC 6749 6, RFC 8707 2.2).
 */
export async function endReplayedGrant(
  ctx: Context,
  client: StatementClient,
  kind: 'code' | 'refresh_token',
  hash: string,
  asked: Asked,
): Promise<{ found: boolean; otherClient: boolean; replayed: boolean; beyondScope: boolean; beyondTarget: boolean }> {
  const now = ctx.clock.now();
  const source =
    kind === 'code' ? Prisma.raw('authorization_codes where code_hash') : Prisma.raw('refresh_tokens where token_hash');
  const unspent =
    kind === 'code'
      ? sql`used_at is null and expires_at > ${ts(now)}`
      : sql`used_at is null and revoked_at is null and expires_at > ${ts(now)}`;
  const beyondScope =
    kind === 'code'
      ? sql`false`
      : sql`not string_to_array(scope, ' ') @> string_to_array(${(asked.scope ?? []).join(' ')}::text, ' ')`;
  const action = kind === 'code' ? 'oauth.code.replay' : 'oauth.refresh_token.replay';
  const [row] = await ctx.db.$queryRaw<{ client_id: string; used: boolean; beyond: boolean; beyond_target: boolean }[]>`
    with seen as (
      select grant_id, client_id, used_at is not null as used, (${unspent} and ${beyondScope}) as beyond,
             (${unspent} and not resources @> ${asked.resources}::text[]) as beyond_target
      from ${source} = ${hash}::text
    ), replayed as (
      select grant_id from seen where used and client_id = ${client.id}::text
    ), ended_grant as (
      update oauth_grants set revoked_at = ${ts(now)} where id in (select grant_id from replayed) and revoked_at is null
    ), ended_tokens as (
      update refresh_tokens set revoked_at = ${ts(now)} where grant_id in (select grant_id from replayed) and revoked_at is null
    ), ${auditRowCte(auditStamp(ctx), 'audit', 'replayed', {
      action,
      organizationId: client.organizationId,
      actorType: 'anonymous',
      actorId: null,
      targetType: 'oauth_client',
      targetId: client.id,
      outcome: 'failure',
      details: {},
    })}
    select client_id, used, beyond, beyond_target from seen`;
  if (!row) return { found: false, otherClient: false, replayed: false, beyondScope: false, beyondTarget: false };
  const otherClient = row.client_id !== client.id;
  return {
    found: true,
    otherClient,
    replayed: row.used && !otherClient,
    beyondScope: row.beyond && !otherClient,
    beyondTarget: row.beyond_target && !otherClient,
  };
}
