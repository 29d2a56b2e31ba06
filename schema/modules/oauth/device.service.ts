// The device authorization grant (RFC 8628, docs/architecture.md#apps-without-secrets): a device without a browser
// (a command line, a TV) asks for a device code and a user code at POST /oauth/device_authorization; a signed-in
// person types the user code on /device, sees the client, its organization and the scopes, and approves or denies;
// meanwhile the device polls the token endpoint (token/device-code.ts). Both codes are random and kept as SHA-256
// only. The user code is 8 letters of an alphabet without vowels (no words, nothing to misread), shown XXXX-XXXX and
// compared without its hyphen or case; each wrong one counts against the person's sign-in throttle, so that a session
// cannot guess at other people's codes. An approval writes the grant, bound to the approving session, in the same
// statement that marks the request answered: a code is answered once.
import { randomInt } from 'node:crypto';
import { hasFactorSql } from '../../auth/access.ts';
import { MfaEnrollmentRequiredError } from '../../auth/access.errors.ts';
import type { Context } from '../../context.ts';
import { Prisma } from '../../db.ts';
import { ForbiddenError, UnauthenticatedError } from '../../errors/index.ts';
import { addSeconds } from '../../lib/clock.ts';
import { randomToken, sha256 } from '../../lib/crypto.ts';
import { expected } from '../../lib/expected.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { sqlTimestamp as ts } from '../../lib/sql-value.ts';
import { admitSignIn } from '../auth/sign-in-policy.ts';
import { admitPasswordAttempt, passwordRejected } from '../auth/throttle.service.ts';
import { authenticateClient } from './client-authentication.ts';
import { liveSession, userAuditCte } from './authorize/issue-code.ts';
import { InvalidRequest, InvalidScope, UnauthorizedClient } from './oauth.errors.ts';
import { licensed, productScopesOf } from './product-scopes.ts';
import { parseResources, requireResourcesAllowed } from './resources.ts';
import { describeScope, parseScope } from './scopes.ts';
import { DEVICE_CODE_GRANT } from './token/device-code.ts';
import { browserSession } from './consent-page.service.ts';
import { DeviceCodeNotFound, DeviceCodeNeedsSecondFactor, DeviceCodeNotMember } from './device.errors.ts';

export const DEVICE_CODE_PREFIX = 'tsdg_';
export const DEVICE_CODE_TTL_SECONDS = 600;
export const DEVICE_POLL_INTERVAL_SECONDS = 5;
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;

export interface DeviceAuthorizationResponse {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

function newUserCode(): string {
  return Array.from({ length: USER_CODE_LENGTH }, () => USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]).join(
    '',
  );
}

/** A typed user code as stored (hyphens and spaces dropped, upper case), or null when it cannot be one. */
export function normalizeUserCode(typed: string): string | null {
  if (typed.length > 32) return null;
  const code = typed.replace(/[-\s]/g, '').toUpperCase();
  return code.length === USER_CODE_LENGTH && [...code].every((c) => USER_CODE_ALPHABET.includes(c)) ? code : null;
}

/** POST /oauth/device_authorization (RFC 8628 3.1, 3.2): the client authenticated as at the token endpoint. */
export async function startDeviceAuthorization(
  ctx: Context,
  params: Record<string, unknown>,
): Promise<DeviceAuthorizationResponse> {
  const client = await authenticateClient(ctx, params.client_id, params.client_secret);
  if (!client.grantTypes.includes(DEVICE_CODE_GRANT)) throw new UnauthorizedClient();
  if (typeof params.scope !== 'string' || !params.scope) throw new InvalidRequest('scope is required');
  if (params.scope.length > 4096) throw new InvalidRequest('scope is too long');
  const scope = parseScope(params.scope);
  if (scope.some((s) => !client.allowedScopes.includes(s))) throw new InvalidScope();
  const resources = parseResources(params.resource);
  requireResourcesAllowed(resources, client.resources);
  const deviceCode = randomToken(DEVICE_CODE_PREFIX);
  const now = ctx.clock.now();
  // A user code that happens to be taken already (20^8 of them) is drawn again.
  for (let attempt = 0; ; attempt++) {
    const userCode = newUserCode();
    const [row] = await ctx.db.$queryRaw<{ id: string }[]>`
      insert into device_authorizations (id, device_code_hash, user_code_hash, client_id, organization_id, scope,
                                         resources, interval_seconds, expires_at, created_at)
      values (${uuidv7()}, ${sha256(deviceCode)}, ${sha256(userCode)}, ${client.id}, ${client.organizationId},
              ${scope.join(' ')}, ${resources}::text[], ${DEVICE_POLL_INTERVAL_SECONDS}, ${ts(addSeconds(now, DEVICE_CODE_TTL_SECONDS))}, ${ts(now)})
      on conflict (user_code_hash) do nothing
      returning id`;
    if (!row && attempt < 3) continue;
    if (!row) throw new Error('startDeviceAuthorization: no free user code after 4 draws');
    const shown = `${userCode.slice(0, 4)}-${userCode.slice(4)}`;
    const verification = `${ctx.settings.issuer()}/device`;
    return {
      device_code: deviceCode,
      user_code: shown,
      verification_uri: verification,
      verification_uri_complete: `${verification}?${new URLSearchParams({ user_code: shown })}`,
      expires_in: DEVICE_CODE_TTL_SECONDS,
      interval: DEVICE_POLL_INTERVAL_SECONDS,
    };
  }
}

/** What /device shows for a pending code: the client, its organization and the scopes in words. */
export interface DeviceRequest {
  userCode: string;
  clientName: string;
  clientDescription: string;
  organizationName: string;
  scopes: { name: string; description: string }[];
}

interface PendingRow {
  id: string;
  scope: string;
  client_row_id: string;
  client_id: string;
  client_name: string;
  client_description: string;
  organization_id: string;
  organization_name: string;
  require_mfa: boolean;
  /** Tessera's own command-line client (cli-client.ts): any signed-in person may approve it. */
  platform_wide: boolean;
  /** The signed-in person has a second factor to sign in with. */
  has_factor: boolean;
}

/**
 * The pending request of a typed user code, or DeviceCodeNotFound (counted against the signed-in person's sign-in
 * throttle, and refused with 429 once it is locked).
 */
async function pendingRequest(ctx: Context, typed: string): Promise<{ row: PendingRow; code: string; email: string }> {
  const actor = ctx.actor;
  if (actor?.kind !== 'user') throw new UnauthenticatedError('Sign in first');
  const person = await ctx.db.user.findUniqueOrThrow({ where: { id: actor.userId }, select: { email: true } });
  await admitPasswordAttempt(ctx, person.email);
  const code = normalizeUserCode(typed);
  const [row] = code
    ? await ctx.db.$queryRaw<PendingRow[]>`
      select d.id, d.scope, c.id as client_row_id, c.client_id, c.name as client_name, c.description as client_description,
             o.id as organization_id, o.name as organization_name, o.require_mfa, c.platform_wide,
             ${hasFactorSql(Prisma.sql`${actor.userId}::text`)} as has_factor
      from device_authorizations d
      join oauth_clients c on c.id = d.client_id and c.enabled
      join organizations o on o.id = d.organization_id
      where d.user_code_hash = ${sha256(code)} and d.status = 'pending' and d.expires_at > ${ts(ctx.clock.now())}`
    : [];
  if (!row || !code) {
    await passwordRejected(ctx, person.email);
    throw new DeviceCodeNotFound();
  }
  return { row, code, email: person.email };
}

export async function describeDeviceRequest(ctx: Context, typed: string): Promise<DeviceRequest> {
  const { row, code } = await pendingRequest(ctx, typed);
  return {
    userCode: `${code.slice(0, 4)}-${code.slice(4)}`,
    clientName: row.client_name,
    clientDescription: row.client_description,
    organizationName: row.organization_name,
    scopes: parseScope(row.scope).map((name) => ({ name, description: describeScope(name) })),
  };
}

/**
 * The person's answer. An approval needs what the authorization endpoint needs: a member of the client's
 * organization (anyone, for the platform-wide command-line client), a licence of each product asked for, a second factor in this session where the organization
 * requires one, and a session the sign-in policy admits (through the connection, where the domain requires it). One statement marks the request answered (only while it is pending: a code is answered once) and,
 * on approval, writes the grant with the session it was made in, and the audit entry.
 */
export async function decideDeviceRequest(
  ctx: Context,
  typed: string,
  approve: boolean,
): Promise<{ approved: boolean }> {
  const { row, email } = await pendingRequest(ctx, typed);
  const session = await browserSession(ctx);
  const now = ctx.clock.now();
  const client = {
    id: row.client_row_id,
    clientId: row.client_id,
    organizationId: row.organization_id,
    name: row.client_name,
  };
  if (!approve) {
    const [denied] = await ctx.db.$queryRaw<{ answered: number }[]>`
      with answered as (
        update device_authorizations set status = 'denied', user_id = ${session.userId}
        where id = ${row.id} and status = 'pending' returning id
      ), ${userAuditCte(ctx, 'audited', 'answered', { action: 'oauth.device.deny', userId: session.userId, client, details: {} })}
      select count(*)::int as answered from answered`;
    if (!expected(denied, "the denial's row").answered) throw new DeviceCodeNotFound();
    return { approved: false };
  }
  // The device's tokens are a way in: a session from before the address's domain required single sign-on approves
  // nothing (docs/architecture.md#single-sign-on).
  await admitSignIn(
    ctx.db,
    email,
    session.connectionId ? { via: 'sso', connectionId: session.connectionId } : { via: 'device_code' },
  );
  // The command line's token asks each organization's second-factor rule where it acts (auth/access.ts).
  if (row.require_mfa && !row.platform_wide && !session.amr.includes('mfa'))
    throw row.has_factor ? new DeviceCodeNeedsSecondFactor() : new MfaEnrollmentRequiredError();
  const products = productScopesOf(parseScope(row.scope));
  const grantId = uuidv7();
  // The command line's tokens act, by default, in the organization the approving session acts in.
  const actingIn = row.platform_wide ? (ctx.actor?.organizationId ?? row.organization_id) : row.organization_id;
  const [approved] = await ctx.db.$queryRaw<{ answered: number; member: boolean; licensed: boolean }[]>`
    with still_member as (
      select 1 where ${row.platform_wide}::boolean or exists (
        select 1 from memberships where user_id = ${session.userId} and organization_id = ${row.organization_id})
    ), holds as (
      select count(*) = ${products.length}::int as all_licensed from products p
      where p.slug = any(${products}::text[]) and ${licensed(Prisma.sql`${session.userId}::text`, Prisma.sql`${row.organization_id}::text`, now)}
    ), signed_in as (${liveSession(session.sessionId)}),
    -- Held until the statement commits: a second approval at the same time waits, then finds it answered.
    pending as (
      select id from device_authorizations where id = ${row.id} and status = 'pending' for update
    ), gate as (
      select 1 from pending, still_member, signed_in, holds where holds.all_licensed
    ), granted as (
      insert into oauth_grants (id, client_id, user_id, session_id, scope, created_at)
      select ${grantId}, ${row.client_row_id}, ${session.userId}, ${session.sessionId}, ${row.scope}, ${ts(now)} from gate
      returning id
    ), answered as (
      update device_authorizations set status = 'approved', user_id = ${session.userId}, grant_id = (select id from granted),
        organization_id = ${actingIn},
        auth_time = ${ts(session.authTime)}, amr = ${session.amr}::text[],
        session_version = (select session_version from users where id = ${session.userId})
      where id = (select id from pending) and exists (select 1 from granted) returning id
    ), ${userAuditCte(ctx, 'audited', 'answered', { action: 'oauth.device.approve', userId: session.userId, client, details: { scope: row.scope } })}
    select (select count(*)::int from answered) as answered, exists (select 1 from still_member) as member,
           (select all_licensed from holds) as licensed`;
  const outcome = expected(approved, "the approval's row");
  if (!outcome.member) throw new DeviceCodeNotMember();
  if (!outcome.licensed) throw new ForbiddenError('You hold no licence of a product this application asks for');
  if (!outcome.answered) throw new DeviceCodeNotFound();
  return { approved: true };
}
