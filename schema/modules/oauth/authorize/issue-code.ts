// Step 13: a single-use code bound to the client, redirect URI, PKCE challenge, nonce and the user's session
// version, written with its grant, the oauth.authorization.granted event (when a webhook wants it, event-sql.ts)
// and the audit entry in ONE statement (data-modifying CTEs): atomic without an interactive transaction, one
// round trip on the hot path. The grant records the session that authorized it, so that ending the session ends
// the grant (docs/architecture.md#identity-sessions-and-tokens); the statement writes nothing unless that session
// is still live, and holds its row until it commits, so that an ending running at the same time either comes first
// (and nothing is written) or waits and then finds the grant (sessions.service.ts endSessions).
import type { Context } from '../../../context.ts';
import { hotStatement, Prisma, type Placeholders } from '../../../db.ts';
import { addSeconds } from '../../../lib/clock.ts';
import { randomToken, sha256 } from '../../../lib/crypto.ts';
import { uuidv7 } from '../../../lib/ids.ts';
import { sqlTimestamp as ts } from '../../../lib/sql-value.ts';
import { auditRowCte, auditStamp } from '../../audit/audit-sql.ts';
import { eventRowCte } from '../../../events/event-sql.ts';
import type { AuthorizationRequest, AuthorizeClient, BrowserSession } from './request.ts';
import { withParams } from './request.ts';

export const CODE_TTL_SECONDS = 300;
export const AUTHORIZATION_CODE_PREFIX = 'tsa_';

type CodeClient = Pick<AuthorizeClient, 'id' | 'clientId' | 'organizationId' | 'name'>;

/** The audit CTE of a user acting on a client, one row per row of `gate`. */
export function userAuditCte(
  ctx: Context,
  name: string,
  gate: string,
  e: { action: string; userId: string; client: CodeClient; details: Record<string, unknown> },
): Prisma.Sql {
  return auditRowCte(auditStamp(ctx), name, gate, {
    action: e.action,
    organizationId: e.client.organizationId,
    actorType: 'user',
    actorId: e.userId,
    targetType: 'oauth_client',
    targetId: e.client.id,
    details: e.details,
  });
}

/** The values of codeInserts: what the request made (the ids, the code's hash, the time) and who asks. */
export interface CodeValues {
  now: Date;
  expiresAt: Date;
  grantId: string;
  codeId: string;
  codeHash: string;
  clientRowId: string;
  clientPublicId: string;
  clientName: string;
  organizationId: string;
  userId: string;
  sessionId: string;
  redirectUri: string;
  scope: string;
  resources: string[];
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  authTime: Date;
  amr: string[];
  sessionVersion: number | null;
  eventId: string;
  auditId: string;
  ip: string | null;
  userAgent: string | null;
}

export function codeValues(
  ctx: Context,
  client: CodeClient,
  request: AuthorizationRequest,
  session: BrowserSession,
  code: string,
): CodeValues {
  const now = ctx.clock.now();
  const audit = auditStamp(ctx);
  return {
    now,
    expiresAt: addSeconds(now, CODE_TTL_SECONDS),
    grantId: uuidv7(),
    codeId: uuidv7(),
    codeHash: sha256(code),
    clientRowId: client.id,
    clientPublicId: client.clientId,
    clientName: client.name,
    organizationId: client.organizationId,
    userId: session.userId,
    sessionId: session.sessionId,
    redirectUri: request.redirectUri,
    scope: request.scope.join(' '),
    // A consent request signed before resources were kept names none.
    resources: request.resources ?? [],
    nonce: request.nonce,
    codeChallenge: request.codeChallenge,
    codeChallengeMethod: request.codeChallengeMethod,
    authTime: session.authTime,
    amr: session.amr,
    sessionVersion: session.sessionVersion ?? null,
    eventId: uuidv7(),
    auditId: audit.id,
    ip: audit.ip,
    userAgent: audit.userAgent,
  };
}

/**
 * The CTEs that write the grant, the code, the event and the audit entry, once for each row of the CTE named
 * "gate" (the caller's: one row while the session is live, none when it has ended or a consent request was already
 * answered; the gate holds the session's row, liveSession). `p` holds
 * the values, or a hot statement's placeholders for them: nothing here branches on a value.
 */
export function codeInserts(p: Placeholders<CodeValues>): Prisma.Sql {
  const text = (v: unknown) => Prisma.sql`${v}::text`;
  return Prisma.sql`
    granted AS (
      INSERT INTO oauth_grants (id, client_id, user_id, session_id, scope, created_at)
      SELECT ${p.grantId}::text, ${p.clientRowId}::text, ${p.userId}::text, ${p.sessionId}::text, ${p.scope}::text, ${ts(p.now)} FROM gate RETURNING id),
    coded AS (
      INSERT INTO authorization_codes (id, code_hash, grant_id, client_id, user_id, organization_id, redirect_uri, scope, resources, nonce,
                                       code_challenge, code_challenge_method, auth_time, amr, session_version, expires_at, created_at)
      SELECT ${p.codeId}::text, ${p.codeHash}::text, granted.id, ${p.clientRowId}::text, ${p.userId}::text, ${p.organizationId}::text,
             ${p.redirectUri}::text, ${p.scope}::text, ${p.resources}::text[], ${p.nonce}::text, ${p.codeChallenge}::text, ${p.codeChallengeMethod}::text,
             ${ts(p.authTime)}, ${p.amr}::text[],
             COALESCE(${p.sessionVersion}::int, (SELECT session_version FROM users WHERE id = ${p.userId}::text)),
             ${ts(p.expiresAt)}, ${ts(p.now)}
      FROM granted RETURNING id),
    ${eventRowCte({ id: p.eventId, at: p.now }, 'announced', 'gate', {
      kind: 'oauth.authorization.granted',
      organizationId: text(p.organizationId),
      facts: {
        client: { id: text(p.clientRowId), clientId: text(p.clientPublicId), name: text(p.clientName) },
        user: { id: text(p.userId) },
        scope: text(p.scope),
      },
    })},
    ${auditRowCte({ id: p.auditId, ip: p.ip, userAgent: p.userAgent, at: p.now }, 'audited', 'gate', {
      action: 'oauth.authorize',
      organizationId: text(p.organizationId),
      actorType: 'user',
      actorId: text(p.userId),
      targetType: 'oauth_client',
      targetId: text(p.clientRowId),
      details: Prisma.sql`jsonb_build_object('scope', ${p.scope}::text)`,
    })}`;
}

/**
 * SQL: one row while the session is live, holding its row until the statement's transaction ends. KEY SHARE, the
 * lock the grant's foreign key takes anyway: it lets the session's last use be written meanwhile, and conflicts only
 * with the FOR UPDATE of an ending (endSessions), so that one waits for the other and this re-reads the row after.
 */
export const liveSession = (sessionId: unknown): Prisma.Sql =>
  Prisma.sql`SELECT 1 FROM sessions WHERE id = ${sessionId}::text AND revoked_at IS NULL FOR KEY SHARE`;

/** issueCode's statement, composed once (db.ts hotStatement). */
const ISSUE_CODE = hotStatement<CodeValues, { issued: number }>(
  (p) =>
    Prisma.sql`WITH gate AS (${liveSession(p.sessionId)}), ${codeInserts(p)} SELECT count(*)::int AS issued FROM gate`,
);

/**
 * Writes the code (one statement, on the hot path's direct pool) and returns the redirect back to the client with it;
 * null when the session ended since it was read (nothing was written).
 */
export async function issueCode(
  ctx: Context,
  client: CodeClient,
  request: AuthorizationRequest,
  session: BrowserSession,
): Promise<string | null> {
  const code = randomToken(AUTHORIZATION_CODE_PREFIX);
  const [row] = await ISSUE_CODE(ctx.db, codeValues(ctx, client, request, session, code));
  return row?.issued ? codeRedirect(ctx, request, code) : null;
}

export function codeRedirect(ctx: Context, request: AuthorizationRequest, code: string): string {
  return withParams(request.redirectUri, { code, state: request.state, iss: ctx.settings.issuer() });
}
