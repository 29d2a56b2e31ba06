// The event catalog: the union of the interface's lists A and B (DESIGN 7). An operation emits every kind
// that describes it. emitEvent writes the outbox row inside the caller's transaction, so a committed change
// always has its events and a rolled-back one never does; delivery (webhooks) reads from there.
import type { Prisma } from '../db.ts';

export const EVENT_KINDS = [
  // list A
  'user.created', 'user.updated', 'user.deleted', 'user.email.verified', 'user.password.changed',
  'session.created', 'session.revoked', 'session.expired',
  'organization.created', 'organization.updated', 'organization.deleted',
  'member.added', 'member.removed', 'member.role.changed',
  'member.invitation.sent', 'member.invitation.accepted', 'member.invitation.expired',
  'oauth.client.created', 'oauth.client.deleted', 'oauth.authorization.granted', 'oauth.token.issued',
  '2fa.enabled', '2fa.disabled', 'api_key.created', 'api_key.revoked',
  // list B
  'organization.member.added', 'organization.member.removed', 'organization.member.role_changed',
  'subscription.created', 'subscription.updated', 'subscription.cancelled', 'subscription.renewed',
  'oauth_client.created', 'oauth_client.deleted', 'oauth_client.token_revoked',
] as const;

export type EventKind = (typeof EVENT_KINDS)[number];

type Tx = Pick<Prisma.TransactionClient, 'event'>;

export async function emitEvent(
  tx: Tx,
  kind: EventKind,
  organization: { id: string; name: string } | null,
  data: Record<string, unknown>,
): Promise<void> {
  await tx.event.create({
    data: {
      kind,
      organizationId: organization?.id ?? null,
      payload: { organization, data } as Prisma.InputJsonValue,
    },
  });
}

/** Several kinds for one operation (list A and list B names), with the same data. */
export async function emitEvents(
  tx: Tx,
  kinds: EventKind[],
  organization: { id: string; name: string } | null,
  data: Record<string, unknown>,
): Promise<void> {
  for (const kind of kinds) await emitEvent(tx, kind, organization, data);
}
