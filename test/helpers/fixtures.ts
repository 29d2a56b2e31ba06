// Builds organizations and people through the public interface only (invitations), as a customer would; the
// invitee's mailbox is the service's outgoing mail.
import { randomBytes } from 'node:crypto';
import { client, signIn, type Client } from './http.ts';
import { databaseOf } from './server.ts';

export const PASSWORD = 'a long enough password';

export interface Person {
  id: string;
  email: string;
  token: string;
  api: Client;
}

export interface Tenant {
  id: string;
  name: string;
  owner: Person;
  admin: Person;
  member: Person;
}

/**
 * The token of the accept link in the newest invitation mail to `email`, as the mail was queued: the link only the
 * invited mailbox sees, which proves the address. Null for a service this process did not start (no mail to read).
 */
export async function mailedInvitationToken(baseUrl: string, email: string): Promise<string | null> {
  const db = databaseOf(baseUrl);
  if (!db) return null;
  const mail = await db.mail.findFirst({
    where: { toAddress: email, kind: 'invitation' },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
  });
  const link = mail?.textBody?.match(/\/invitations\/accept\?token=(\S+)/);
  if (!link) throw new Error(`no invitation mail to ${email}`);
  return decodeURIComponent(link[1]!);
}

/**
 * Invites a new address of `domain` into the organization with `role` and accepts as a new account from the mailed
 * link, so that the address is verified as the invitee's own would be (a service started elsewhere: the link the
 * inviter is shown, which leaves it unverified). An organization that verified `domain` manages the account
 * (docs/architecture.md#managed-accounts); nobody verifies example.test.
 */
export async function addPerson(
  baseUrl: string,
  inviter: Client,
  organizationId: string,
  role: 'owner' | 'admin' | 'member',
  label: string = role,
  domain = 'example.test',
): Promise<Person> {
  const email = `${label}-${randomBytes(4).toString('hex')}@${domain}`;
  const invite = await inviter.post(`/v1/organizations/${organizationId}/invitations`, { email, role });
  if (invite.status !== 201) throw new Error(`invite failed: ${invite.status} ${JSON.stringify(invite.body)}`);
  const token = (await mailedInvitationToken(baseUrl, email)) ?? invite.body.token;
  const accepted = await client(baseUrl).post('/api/v1/invitations/accept', { token, name: label, password: PASSWORD });
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  return {
    id: accepted.body.user.id,
    email,
    token: accepted.body.token,
    api: client(baseUrl, { token: accepted.body.token }),
  };
}

/** A customer organization with an owner, an admin and a member; the platform admin who set it up leaves. */
export async function createTenant(
  baseUrl: string,
  platformAdmin: Client,
  name = `Tenant ${randomBytes(3).toString('hex')}`,
): Promise<Tenant> {
  const org = await platformAdmin.post('/v1/organizations', { name });
  if (org.status !== 201) throw new Error(`create organization failed: ${org.status} ${JSON.stringify(org.body)}`);
  const owner = await addPerson(baseUrl, platformAdmin, org.body.id, 'owner');
  const admin = await addPerson(baseUrl, owner.api, org.body.id, 'admin');
  const member = await addPerson(baseUrl, owner.api, org.body.id, 'member');
  const me = await platformAdmin.get('/api/v1/users/me');
  const left = await platformAdmin.delete(`/v1/organizations/${org.body.id}/members/${me.body.id}`);
  if (left.status !== 204) throw new Error(`leave failed: ${left.status} ${JSON.stringify(left.body)}`);
  return { id: org.body.id, name, owner, admin, member };
}

export { signIn };
