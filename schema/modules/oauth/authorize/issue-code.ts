// Step 13: a single-use code bound to the client, redirect URI, PKCE challenge, nonce and the user's session
// version, written with its grant, the oauth.authorization.granted event (when a webhook wants it, event-sql.ts)
// and the audit entry in ONE statement (data-modifying CTEs): atomic without an interactive transaction, one
// round trip on the hot path.
import type { Context } from '../../../context.ts';
import { hotQuery, Prisma } from '../../../db.ts';
import { addSeconds } from '../../../lib/clock.ts';
import { randomToken, sha256 } from '../../../lib/crypto.ts';
import { uuidv7 } from '../../../lib/ids.ts';
import { sqlTimestamp as ts } from '../../../lib/sql-value.ts';
import { auditRowCte, auditStamp } from '../../audit/audit-sql.ts';
import { eventRowCte, eventStamp } from '../../../events/event-sql.ts';
import type { AuthorizationRequest, AuthorizeClient, BrowserSession } from './request.ts';
import { withParams } from './request.ts';

export const CODE_TTL_SECONDS = 300;

type CodeClient = Pick<AuthorizeClient, 'id' | 'clientId' | 'organizationId' | 'name'>;

/** The audit CTE of a user acting on a client, one row per row of `gate`. */
export function userAuditCte(ctx: Context, name: string, gate: string, e: { action: string; userId: string; client: CodeClient; details: Record<string, unknown> }): Prisma.Sql {
  return auditRowCte(auditStamp(ctx), name, gate, {
    action: e.action, organizationId: e.client.organizationId, actorType: 'user', actorId: e.userId,
    targetType: 'oauth_client', targetId: e.client.id, details: e.details,
  });
}

/**
 * The CTEs that write the grant, the code, the event and the audit entry, once for each row of the CTE named
 * "gate" (the caller's: always one row at authorize, none when a consent request was already answered).
 */
export function codeInserts(ctx: Context, client: CodeClient, request: AuthorizationRequest, session: BrowserSession, code: string): Prisma.Sql {
  const now = ctx.clock.now();
  const scope = request.scope.join(' ');
  return Prisma.sql`
    granted AS (
      INSERT INTO oauth_grants (id, client_id, user_id, scope, created_at)
      SELECT ${uuidv7()}::text, ${client.id}::text, ${session.userId}::text, ${scope}::text, ${ts(now)} FROM gate RETURNING id),
    coded AS (
      INSERT INTO authorization_codes (id, code_hash, grant_id, client_id, user_id, organization_id, redirect_uri, scope, nonce,
                                       code_challenge, code_challenge_method, auth_time, amr, session_version, expires_at, created_at)
      SELECT ${uuidv7()}::text, ${sha256(code)}::text, granted.id, ${client.id}::text, ${session.userId}::text, ${client.organizationId}::text,
             ${request.redirectUri}::text, ${scope}::text, ${request.nonce}::text, ${request.codeChallenge}::text, ${request.codeChallengeMethod}::text,
             ${ts(session.authTime)}, ${session.amr}::text[],
             COALESCE(${session.sessionVersion ?? null}::int, (SELECT session_version FROM users WHERE id = ${session.userId}::text)),
             ${ts(addSeconds(now, CODE_TTL_SECONDS))}, ${ts(now)}
      FROM granted RETURNING id),
    ${eventRowCte(eventStamp(ctx), 'announced', 'gate', {
      kind: 'oauth.authorization.granted', organizationId: client.organizationId, facts: { client, user: { id: session.userId }, scope },
    })},
    ${userAuditCte(ctx, 'audited', 'gate', { action: 'oauth.authorize', userId: session.userId, client, details: { scope } })}`;
}

/** Writes the code (one statement, on the hot path's direct pool: hotQuery) and returns the redirect back to the client with it. */
export async function issueCode(ctx: Context, client: CodeClient, request: AuthorizationRequest, session: BrowserSession): Promise<string> {
  const code = randomToken('tsa_');
  await hotQuery(ctx.db, Prisma.sql`WITH gate AS (SELECT 1), ${codeInserts(ctx, client, request, session, code)} SELECT 1`);
  return codeRedirect(ctx, request, code);
}

export function codeRedirect(ctx: Context, request: AuthorizationRequest, code: string): string {
  return withParams(request.redirectUri, { code, state: request.state, iss: ctx.settings.issuer() });
}
