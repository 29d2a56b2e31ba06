// The user's answer on the consent page, in ONE statement: the request is marked answered, and only if it was
// not answered before are the consent remembered (merged with the scopes already allowed), the audit entry
// written and, on Allow, the code issued. A failure anywhere leaves none of it behind, so the request can be
// answered again and nothing is remembered that the application never got. An approval also re-checks, in the
// same statement, that the user is still a member of the client's organization (the page may be minutes old), that
// an organization a metadata document's client acts in still allows such clients, and
// that the session is still live, holding its row as issue-code.ts does.
import type { Context } from '../../../context.ts';
import { hotQuery, Prisma } from '../../../db.ts';
import { randomToken } from '../../../lib/crypto.ts';
import { uuidv7 } from '../../../lib/ids.ts';
import { sqlTimestamp } from '../../../lib/sql-value.ts';
import type { ConsentRequest } from './consent-request.ts';
import {
  AUTHORIZATION_CODE_PREFIX,
  codeInserts,
  codeRedirect,
  codeValues,
  liveSession,
  userAuditCte,
} from './issue-code.ts';
import type { AuthorizeClient, BrowserSession } from './request.ts';
import { expected } from '../../../lib/expected.ts';

type Client = Pick<AuthorizeClient, 'id' | 'clientId' | 'organizationId' | 'name'> & { metadataDocument?: boolean };

/**
 * `member` false: the user has left the client's organization (or, for a metadata document's client, the
 * organization no longer allows such clients), `live` false: the session has ended; either way
 * nothing was written. Else the redirect with a code, or null when the request had already been answered.
 */
export async function recordApproval(
  ctx: Context,
  client: Client,
  consent: ConsentRequest,
  session: BrowserSession,
): Promise<{ member: boolean; live: boolean; redirect: string | null }> {
  const code = randomToken(AUTHORIZATION_CODE_PREFIX);
  const request = consent.req;
  const now = ctx.clock.now();
  const [row] = await hotQuery<{ answered: number; member: boolean; live: boolean }>(
    ctx.db,
    Prisma.sql`
    WITH still_member AS (
      SELECT 1 FROM memberships WHERE user_id = ${session.userId}::text AND organization_id = ${client.organizationId}::text
        AND (NOT ${client.metadataDocument === true}::boolean OR EXISTS (
          SELECT 1 FROM organizations o WHERE o.id = ${client.organizationId}::text AND o.allow_metadata_clients))),
    signed_in AS (${liveSession(session.sessionId)}),
    gate AS (
      INSERT INTO oauth_consent_answers (jti, expires_at) SELECT ${consent.jti}::text, ${sqlTimestamp(new Date(consent.exp * 1000))} FROM still_member, signed_in
      ON CONFLICT (jti) DO NOTHING RETURNING jti),
    remembered AS (
      INSERT INTO oauth_consents (id, user_id, client_id, scopes, created_at, updated_at)
      SELECT ${uuidv7()}::text, ${session.userId}::text, ${client.id}::text, ${request.scope}::text[], ${sqlTimestamp(now)}, ${sqlTimestamp(now)} FROM gate
      ON CONFLICT (user_id, client_id) DO UPDATE SET updated_at = EXCLUDED.updated_at,
        scopes = ARRAY(SELECT x FROM unnest(oauth_consents.scopes || EXCLUDED.scopes) WITH ORDINALITY AS t(x, n) GROUP BY x ORDER BY min(n))),
    ${userAuditCte(ctx, 'consented', 'gate', { action: 'oauth.consent.grant', userId: session.userId, client, details: { scope: request.scope.join(' ') } })},
    ${codeInserts(codeValues(ctx, client, request, session, code))}
    SELECT (SELECT count(*)::int FROM gate) AS answered, EXISTS (SELECT 1 FROM still_member) AS member, EXISTS (SELECT 1 FROM signed_in) AS live`,
  );
  const { member, live, answered } = expected(row, "the consent statement's row");
  return { member, live, redirect: answered ? codeRedirect(ctx, request, code) : null };
}

/** Whether the denial was recorded (false when the request had already been answered). */
export async function recordDenial(
  ctx: Context,
  client: Client,
  consent: ConsentRequest,
  userId: string,
): Promise<boolean> {
  const [row] = await hotQuery<{ answered: number }>(
    ctx.db,
    Prisma.sql`
    WITH gate AS (
      INSERT INTO oauth_consent_answers (jti, expires_at) VALUES (${consent.jti}::text, ${sqlTimestamp(new Date(consent.exp * 1000))})
      ON CONFLICT (jti) DO NOTHING RETURNING jti),
    ${userAuditCte(ctx, 'denied', 'gate', { action: 'oauth.consent.deny', userId, client, details: {} })}
    SELECT count(*)::int AS answered FROM gate`,
  );
  return expected(row, "the denial statement's row").answered > 0;
}
