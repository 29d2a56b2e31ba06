// Home-realm discovery (docs/architecture.md#single-sign-on): which identity provider an address or a domain signs in
// through. Asked by /login and by /oauth/authorize for a login_hint or domain_hint. It is sign-in's, beside the policy
// that reads the same tables (requiredConnectionSql, sign-in-policy.ts), so that authorizing reaches it without the
// SSO domain, which builds on sign-in.
import type { Context } from '../../context.ts';
import { domainOf } from '../../lib/email.ts';

/** Where an address or a domain signs in: the enabled connection serving its verified domain, if any. */
export interface SsoRoute {
  connectionId: string;
  name: string;
  requireSso: boolean;
}

export async function ssoRouteForDomain(ctx: Pick<Context, 'db'>, domain: string): Promise<SsoRoute | null> {
  const name = domainOf(domain);
  if (!name || name.length > 253) return null;
  const [route] = await ctx.db.$queryRaw<SsoRoute[]>`
    select c.id as "connectionId", c.name, c.require_sso as "requireSso"
    from domains d
    join sso_connection_domains cd on cd.domain_id = d.id
    join sso_connections c on c.id = cd.connection_id
    where d.domain = ${name} and d.verified_at is not null and c.enabled`;
  return route ?? null;
}

export const ssoRouteFor = (ctx: Pick<Context, 'db'>, email: string) =>
  email.includes('@') ? ssoRouteForDomain(ctx, domainOf(email)) : Promise.resolve(null);
