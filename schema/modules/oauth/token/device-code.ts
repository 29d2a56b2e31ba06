// The device_code grant (RFC 8628 3.4, 3.5; docs/architecture.md#apps-without-secrets). A poll first tries to redeem:
// one statement turns an approved request into an issued one and issues from its grant as a refresh does (the grant
// stands, the session version has not moved, the user is still a member; the next refresh token, the event and the
// audit entry), so that of any number of polls at once exactly one gets the tokens. Anything else is answered by a
// second statement, which records the poll: authorization_pending, slow_down (a poll sooner than the interval after
// the last one adds 5 s to it), access_denied, expired_token, or invalid_grant once the tokens were issued.
import type { Context } from '../../../context.ts';
import { Prisma } from '../../../db.ts';
import { sha256 } from '../../../lib/crypto.ts';
import { sqlTimestamp as ts } from '../../../lib/sql-value.ts';
import type { AuthenticatedClient } from '../client-authentication.ts';
import { InvalidGrant, InvalidTarget, OAuthError } from '../oauth.errors.ts';
import { askedResources, redeemingGrant, required, tokensOf, type Params } from './grant.ts';
import { nextRefresh } from './refresh-token.ts';
import {
  clientUnchanged,
  issueAndEnd,
  issueValues,
  redeemable,
  redeemingStatement,
  subjectColumns,
  subjectFrom,
} from './statements.ts';

const sql = Prisma.sql;

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** RFC 8628 3.5: the device polls on. */
export class AuthorizationPending extends OAuthError {
  constructor() {
    super('authorization_pending', 'The person has not answered yet: poll again after the interval');
  }
}
export class SlowDown extends OAuthError {
  constructor() {
    super('slow_down', 'Polling too fast: the interval is now 5 seconds longer');
  }
}
/** The person denied it: access_denied, with the token endpoint's 400 (RFC 6749 5.2), not a page's 403. */
export class DeviceAccessDenied extends OAuthError {
  override readonly status = 400;
  constructor() {
    super('access_denied', 'The person denied the request');
  }
}
export class ExpiredToken extends OAuthError {
  constructor() {
    super('expired_token', 'The device code has expired: start again');
  }
}

/** A poll: the device code's hash, and the resources asked (RFC 8707 2.2: some of the request's; none: all). */
interface DevicePoll {
  hash: string;
  resources: string[];
}

export const REDEEM_DEVICE_CODE = redeemingStatement<DevicePoll>(
  (p, how) => sql`
    with consumed as (
      update device_authorizations set status = 'issued', last_polled_at = ${p.now}::timestamp(3)
      where device_code_hash = ${p.hash}::text and client_id = ${p.clientRowId}::text and status = 'approved'
        and expires_at > ${p.now}::timestamp(3) and ${clientUnchanged(p)} and ${redeemable(how)}
        and resources @> ${p.resources}::text[]
      returning grant_id, user_id, organization_id, scope, resources, auth_time, amr, session_version
    ), subject as (
      select c.grant_id, null::text as nonce, c.auth_time, c.amr, c.session_version,
        true as redirect_ok, false as has_challenge, true as pkce_ok,
        ${subjectColumns(p, how)}
      ${subjectFrom(p.now, how)}
    )
    ${issueAndEnd(p, DEVICE_CODE_GRANT, how)}`,
);

export const deviceCode = redeemingGrant<DevicePoll>({
  read(params: Params) {
    const code = required(params.device_code, 'device_code');
    if (code instanceof OAuthError) return code;
    const resources = askedResources(params);
    return resources instanceof OAuthError ? resources : { hash: sha256(code), resources };
  },

  async issue(ctx, client, request, lastTry) {
    const refresh = nextRefresh(ctx, client);
    const redeemed = await REDEEM_DEVICE_CODE(
      ctx,
      client,
      { ...issueValues(ctx, client, refresh?.stored ?? null), hash: request.hash, resources: request.resources },
      lastTry,
    );
    if (!redeemed) return 'unredeemed';
    return tokensOf(ctx, client, redeemed, refresh, null, request.resources);
  },

  async refuse(ctx, client, request) {
    throw await pollAnswer(ctx, client, request);
  },
});

type Answer =
  'invalid_grant' | 'expired_token' | 'access_denied' | 'invalid_target' | 'slow_down' | 'authorization_pending';

/**
 * Records a poll that redeemed nothing and says why, in one statement. The row is locked while it is read, so
 * polls at once are answered one after the other, each seeing the last one's time.
 */
async function pollAnswer(ctx: Context, client: AuthenticatedClient, poll: DevicePoll): Promise<OAuthError> {
  const now = ts(ctx.clock.now());
  const [row] = await ctx.db.$queryRaw<{ answer: Answer }[]>`
    with polled as (
      select id, status, expires_at, last_polled_at, interval_seconds, resources from device_authorizations
      where device_code_hash = ${poll.hash} and client_id = ${client.id} for update
    ), answer as (
      select id, case when status = 'issued' then 'invalid_grant'
                      when expires_at <= ${now} then 'expired_token'
                      when status = 'denied' then 'access_denied'
                      when not resources @> ${poll.resources}::text[] then 'invalid_target'
                      when last_polled_at > ${now} - make_interval(secs => interval_seconds) then 'slow_down'
                      else 'authorization_pending' end as answer
      from polled
    ), touched as (
      update device_authorizations d set last_polled_at = ${now},
        interval_seconds = d.interval_seconds + case when a.answer = 'slow_down' then 5 else 0 end
      from answer a where d.id = a.id and a.answer in ('slow_down', 'authorization_pending')
    )
    select answer from answer`;
  switch (row?.answer) {
    case undefined:
      return new InvalidGrant('Device code is invalid');
    case 'invalid_grant':
      return new InvalidGrant('The tokens of this device code were issued already');
    case 'expired_token':
      return new ExpiredToken();
    case 'access_denied':
      return new DeviceAccessDenied();
    case 'invalid_target':
      return new InvalidTarget('The resource was not named in the device authorization request');
    case 'slow_down':
      return new SlowDown();
    case 'authorization_pending':
      return new AuthorizationPending();
  }
}
