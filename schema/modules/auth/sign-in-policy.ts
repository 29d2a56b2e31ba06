// The organizations' sign-in policy (docs/architecture.md#single-sign-on): which connection must sign in an address,
// and the one rule every way in asks. Its own file, so that a way in outside sign-in (an invitation, a device code)
// asks it without reaching the rest of sign-in.
import { Prisma } from '../../db.ts';
import { domainOf } from '../../lib/email.ts';
import { SsoRequiredError } from './auth.errors.ts';

/**
 * SQL, the enabled connection that must sign in the addresses of `domain` (require_sso on a verified domain it
 * serves), as rows (id, name): none, or one, since a domain is served by one connection at most. Every way in asks
 * it (docs/architecture.md#single-sign-on): the password inside its own statement, the others through signInWith.
 */
export const requiredConnectionSql = (domain: string) => Prisma.sql`
  select c.id, c.name from domains d
  join sso_connection_domains cd on cd.domain_id = d.id
  join sso_connections c on c.id = cd.connection_id
  where d.domain = ${domain} and d.verified_at is not null and c.enabled and c.require_sso`;

/**
 * How a sign-in proved the person, as the policy sees it: the password step of /login has asked
 * requiredConnectionSql in its own statement already; a connection may sign in the addresses it is required for;
 * every other way in (the second step, a passkey, an invitation that makes an account, a device code approved in a
 * session of Tessera's own) is asked here.
 */
export type WayIn =
  | { via: 'password' }
  | { via: 'second_factor' | 'passkey' | 'invitation' | 'device_code' }
  | { via: 'sso'; connectionId: string };

/**
 * The organizations' sign-in policy, one rule for every way in: an address whose domain requires single sign-on
 * gets a session only from the connection that serves it (403 sso_required otherwise). require_mfa needs nothing
 * here: a person with a factor always meets it at the password, and one without is flagged (loginPayload) and held
 * back in the organization at every request (awaitingFactor, auth/access.ts), whichever way they came in.
 */
export async function admitSignIn(
  db: Pick<Prisma.TransactionClient, '$queryRaw'>,
  email: string,
  way: WayIn,
): Promise<void> {
  if (way.via === 'password') return;
  const [required] = await db.$queryRaw<{ id: string; name: string }[]>`${requiredConnectionSql(domainOf(email))}`;
  if (required && !(way.via === 'sso' && way.connectionId === required.id)) throw new SsoRequiredError(required);
}
