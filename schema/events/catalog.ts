// The event catalog: the union of the interface's lists A and B (DESIGN 7), one row per kind with its group, its
// lists, a description and an example of its data. An operation emits every kind that describes it.
//
// emitEvent writes the outbox row inside the caller's transaction, with the envelope as the exact JSON text that
// receivers get. The insert itself fans out (trigger events_webhook_fan_out, migration 20261123090000_webhooks): a
// delivery row and a graphile-worker job for each active webhook of the organization subscribed to the kind, in the
// same transaction. So a committed change always has its events and deliveries, and a rolled-back one has none.
import { uuidv7 } from '../lib/ids.ts';
import type { Prisma } from '../db.ts';

type List = 'A' | 'B';
export interface EventType {
  group: string;
  lists: List[];
  description: string;
  example: Record<string, unknown>;
}

const user = { id: '0195f3a0-0000-7000-8000-000000000001', email: 'ada@example.com', name: 'Ada Lovelace' };
const org = { id: '0195f3a0-0000-7000-8000-0000000000a1', name: 'Acme' };
const client = { id: '0195f3a0-0000-7000-8000-0000000000c1', clientId: 'tsc_example', name: 'Acme CRM' };
const subscription = {
  id: '0195f3a0-0000-7000-8000-0000000000b1', organization_id: org.id, product_id: '0195f3a0-0000-7000-8000-0000000000d1',
  product: { id: '0195f3a0-0000-7000-8000-0000000000d1', slug: 'analytics', name: 'Analytics' },
  total_seats: 10, assigned_seats: 3, price_per_seat: 19.99, billing_cycle: 'monthly', status: 'active', end_date: null,
  created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z',
};
const fullUser = { ...user, emailVerified: true, createdAt: '2026-01-01T00:00:00.000Z' };
const memberChange = { organization_id: org.id, member_id: user.id, user, role: 'member' };
const invitation = { id: '0195f3a0-0000-7000-8000-0000000000f1', email: user.email, role: 'member', invitedBy: '0195f3a0-0000-7000-8000-000000000002' };

const t = (group: string, lists: List[], description: string, example: Record<string, unknown>): EventType => ({ group, lists, description, example });

export const EVENT_CATALOG = {
  'user.created': t('User', ['A', 'B'], 'An account was created (by accepting an invitation or by an administrator).', { user: fullUser }),
  'user.updated': t('User', ['A', 'B'], 'A profile changed (name, picture, e-mail).', { user: fullUser }),
  'user.deleted': t('User', ['A', 'B'], 'An account was deleted.', { user: { id: user.id, email: user.email } }),
  'user.email.verified': t('User', ['A'], 'An e-mail address was verified.', { user: fullUser }),
  'user.password.changed': t('User', ['A'], 'A password changed; every session and token of the user ended.', { user: { id: user.id, email: user.email } }),
  'session.created': t('Session', ['A'], 'A user signed in.', { session: { id: '0195f3a0-0000-7000-8000-0000000000e1', userId: user.id, createdAt: '2026-01-01T00:00:00.000Z' } }),
  'session.revoked': t('Session', ['A'], 'A session was ended (sign-out or revocation).', { session: { id: '0195f3a0-0000-7000-8000-0000000000e1' } }),
  'session.expired': t('Session', ['A'], 'A session reached its end of life.', { session: { id: '0195f3a0-0000-7000-8000-0000000000e1' } }),
  'organization.created': t('Organization', ['A'], 'An organization was created.', { organization: { ...org, createdAt: '2026-01-01T00:00:00.000Z' } }),
  'organization.updated': t('Organization', ['A', 'B'], 'An organization changed.', { organization: org, changes: ['name'] }),
  'organization.deleted': t('Organization', ['A'], 'An organization was deleted.', { organization: org }),
  'member.added': t('Member', ['A'], 'Someone joined the organization.', memberChange),
  'member.removed': t('Member', ['A'], 'Someone left or was removed from the organization.', memberChange),
  'member.role.changed': t('Member', ['A'], "A member's role changed.", { ...memberChange, previous_role: 'member', role: 'admin' }),
  'member.invitation.sent': t('Member', ['A'], 'An invitation was sent.', { invitation: { ...invitation, expiresAt: '2026-01-08T00:00:00.000Z' } }),
  'member.invitation.accepted': t('Member', ['A'], 'An invitation was accepted.', { invitation, user, organization: org }),
  'member.invitation.expired': t('Member', ['A'], 'An invitation expired unanswered.', { invitation: { ...invitation, expiresAt: '2026-01-08T00:00:00.000Z' } }),
  'oauth.client.created': t('OAuth', ['A'], 'An OAuth client was registered.', { client }),
  'oauth.client.deleted': t('OAuth', ['A'], 'An OAuth client was deleted.', { client }),
  'oauth.authorization.granted': t('OAuth', ['A'], 'A user authorized a client (an authorization code was issued).', { client, user: { id: user.id }, scope: 'openid email' }),
  'oauth.token.issued': t('OAuth', ['A'], 'Tokens were issued to a client.', { client: { id: client.id, clientId: client.clientId }, user: { id: user.id }, scope: 'openid email', kind: 'user' }),
  '2fa.enabled': t('Security', ['A'], 'Two-factor authentication was turned on.', { user: { id: user.id, email: user.email } }),
  '2fa.disabled': t('Security', ['A'], 'Two-factor authentication was turned off.', { user: { id: user.id, email: user.email } }),
  'api_key.created': t('Security', ['A'], 'An API key was created.', { apiKey: { id: '0195f3a0-0000-7000-8000-0000000000e2', name: 'CI', role: 'member' } }),
  'api_key.revoked': t('Security', ['A'], 'An API key was revoked.', { apiKey: { id: '0195f3a0-0000-7000-8000-0000000000e2', name: 'CI' } }),
  'organization.member.added': t('Organization', ['B'], 'Someone joined the organization.', memberChange),
  'organization.member.removed': t('Organization', ['B'], 'Someone left or was removed from the organization.', memberChange),
  'organization.member.role_changed': t('Organization', ['B'], "A member's role changed.", { ...memberChange, previous_role: 'member', role: 'admin' }),
  'subscription.created': t('Subscription', ['B'], 'A subscription was created.', { subscription }),
  'subscription.updated': t('Subscription', ['B'], 'A subscription changed (seats, price, status, end date).', { subscription, changes: ['total_seats'] }),
  'subscription.cancelled': t('Subscription', ['B'], 'A subscription was cancelled.', { subscription: { ...subscription, status: 'cancelled' } }),
  'subscription.renewed': t('Subscription', ['B'], 'A subscription was renewed for another period.', { subscription }),
  'oauth_client.created': t('OAuth', ['B'], 'An OAuth client was registered.', { client }),
  'oauth_client.deleted': t('OAuth', ['B'], 'An OAuth client was deleted.', { client }),
  'oauth_client.token_revoked': t('OAuth', ['B'], "A client's token was revoked (RFC 7009).", { client: { id: client.id, clientId: client.clientId }, grantId: '0195f3a0-0000-7000-8000-0000000000a2' }),
} as const satisfies Record<string, EventType>;

export type EventKind = keyof typeof EVENT_CATALOG;
export const EVENT_KINDS = Object.keys(EVENT_CATALOG) as EventKind[];
export const isEventKind = (kind: string): kind is EventKind => Object.hasOwn(EVENT_CATALOG, kind);

type Tx = Pick<Prisma.TransactionClient, 'event'>;
type OrganizationRef = { id: string; name: string };

/** The envelope as the exact text sent: {id, event, timestamp, organization, data}. */
export function eventBody(id: string, kind: string, at: Date, organization: OrganizationRef | null, data: unknown): string {
  return JSON.stringify({ id, event: kind, timestamp: at.toISOString(), organization: organization && { id: organization.id, name: organization.name }, data });
}

export async function emitEvent(
  tx: Tx,
  kind: EventKind,
  organization: OrganizationRef | null,
  data: Record<string, unknown>,
  options: { at?: Date; webhookId?: string } = {},
): Promise<string> {
  const id = uuidv7();
  const at = options.at ?? new Date();
  await tx.event.create({
    data: { id, kind, organizationId: organization?.id ?? null, body: eventBody(id, kind, at, organization, data), webhookId: options.webhookId ?? null, createdAt: at },
    select: { id: true },
  });
  return id;
}

/** Several kinds for one operation (list A and list B names), with the same data. */
export async function emitEvents(tx: Tx, kinds: EventKind[], organization: OrganizationRef | null, data: Record<string, unknown>): Promise<void> {
  for (const kind of kinds) await emitEvent(tx, kind, organization, data);
}
