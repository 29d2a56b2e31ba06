// The client_credentials grant (RFC 6749 4.4): a machine client acting for itself, with no user. Never remembered
// (token.service.ts): the grant is written by one statement after a fresh client authentication.
import type { Context } from '../../../context.ts';
import { Prisma } from '../../../db.ts';
import { uuidv7 } from '../../../lib/ids.ts';
import { sqlTimestamp as ts } from '../../../lib/sql-value.ts';
import { eventRowCte, eventStamp } from '../../../events/event-sql.ts';
import { InvalidScope } from '../oauth.errors.ts';
import { parseResources, requireResourcesAllowed } from '../resources.ts';
import { parseScope } from '../scopes.ts';
import type { Grant } from './grant.ts';
import { signTokens, type TokenSubject } from './sign.ts';
import { tokenIssuanceAudit, type StatementClient } from './statements.ts';

const sql = Prisma.sql;
const USER_SCOPES = new Set(['openid', 'offline_access', 'profile', 'email']);

export const clientCredentials: Grant = {
  async redeem(ctx, client, params) {
    const asked = typeof params.scope === 'string' ? parseScope(params.scope) : [];
    // Without a scope parameter, what the client may have minus `api`: that one is never granted by default
    // (docs/architecture.md#oauth-and-openid-connect).
    const candidates = asked.length ? asked : client.allowedScopes.filter((s) => !USER_SCOPES.has(s) && s !== 'api');
    if (asked.some((s) => USER_SCOPES.has(s) || !client.allowedScopes.includes(s))) throw new InvalidScope();
    const resources = parseResources(params.resource);
    requireResourcesAllowed(resources, client.resources);
    // A machine holds no license: the statement leaves out the scopes that name a product, or refuses them when asked.
    const granted = await recordClientCredentialsGrant(ctx, client, candidates, asked.length > 0);
    if (!granted) throw new InvalidScope();
    const { grantId, scope } = granted;
    const subject: TokenSubject = {
      client,
      grantId,
      userId: null,
      organizationId: client.organizationId,
      scope,
      resources,
      authTime: null,
      amr: [],
      sessionVersion: 0,
    };
    return signTokens(ctx, subject, {});
  },
};

/**
 * A machine client's grant, with its event and audit entry, for the scopes of `candidates` that name no product: a
 * product scope is a license, which only a user holds. `strict` (the client asked for these scopes): one naming a
 * product refuses the request, and nothing is written. The grant id and the scope granted, or null when refused.
 */
async function recordClientCredentialsGrant(
  ctx: Context,
  client: StatementClient,
  candidates: string[],
  strict: boolean,
): Promise<{ grantId: string; scope: string[] } | null> {
  const now = ctx.clock.now();
  const grantId = uuidv7();
  const [row] = await ctx.db.$queryRaw<{ scope: string }[]>`
    with kept as (
      select array_to_string(array(
        select x from unnest(${candidates}::text[]) with ordinality as t(x, n)
        where not exists (select 1 from products p where p.slug = x) order by n), ' ') as scope
    ), allowed as (
      select scope from kept where not ${strict}::boolean or scope = ${candidates.join(' ')}::text
    ), new_grant as (
      insert into oauth_grants (id, client_id, user_id, scope, created_at)
      select ${grantId}::text, ${client.id}::text, null, scope, ${ts(now)} from allowed
    ), ${eventRowCte(eventStamp(ctx), 'event', 'allowed', {
      kind: 'oauth.token.issued',
      organizationId: client.organizationId,
      facts: { client, user: null, scope: sql`allowed.scope`, grantType: 'client_credentials' },
    })}${tokenIssuanceAudit(ctx, 'allowed', {
      action: 'oauth.token.issue',
      organizationId: client.organizationId,
      actorType: 'anonymous',
      actorId: null,
      targetType: 'oauth_client',
      targetId: client.id,
      details: sql`jsonb_build_object('kind', 'client_credentials', 'scope', allowed.scope)`,
    })}
    select scope from allowed`;
  return row ? { grantId, scope: row.scope.split(' ').filter(Boolean) } : null;
}
