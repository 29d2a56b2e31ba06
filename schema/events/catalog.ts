// The event catalog (docs/architecture.md#events-webhooks-and-the-outbox): the union of the interface's lists A
// and B, one row per kind with its group, its lists, a description and the BUILDER of its data. The builder is the
// one place that defines a kind's shape: emitters hand it the facts (typed per kind) and it decides the keys, so
// callers cannot invent shapes. The example is the builder applied to sample facts, so it always has the shape
// receivers get. Writing events is emit.ts's (emitEvent, emitEvents, emitUserEvent), which reads this table.
//
// Case rule: list A kinds camelCase, list B kinds snake_case. Kinds in both lists (user.created, user.updated,
// user.deleted, organization.updated) keep the list A shape: user.created's shape is given by the interface in
// camelCase, and organization.updated's keys are single words, the same in both cases.
//
// Audience: user.*, session.* and 2fa.* are about a person, not a tenant: they are emitted once for each
// organization the user belongs to at that moment (emitUserEvent), and a user with no organization produces none.

type List = 'A' | 'B';

export interface UserRef {
  id: string;
  email: string;
  name: string;
}
export interface UserRecord extends UserRef {
  emailVerified: boolean;
  createdAt: Date;
}
export interface OrganizationRef {
  id: string;
  name: string;
}
export interface ClientRef {
  id: string;
  clientId: string;
  name: string;
}
interface MemberFacts {
  organization: OrganizationRef;
  user: UserRef;
  role: string;
}
interface RoleChangeFacts extends MemberFacts {
  previousRole: string;
}
interface InvitationFacts {
  id: string;
  email: string;
  role: string;
  invitedBy: string | null;
  expiresAt: Date;
}
export interface SubscriptionFacts {
  id: string;
  organizationId: string;
  productId: string;
  product: { id: string; slug: string; name: string };
  totalSeats: number;
  assignedSeats: number;
  pricePerSeat: { toFixed(digits: number): string } | number;
  billingCycle: string;
  status: string;
  endDate: Date | null;
  createdAt: Date;
  updatedAt: Date;
}
interface SubscriptionChangeFacts {
  subscription: SubscriptionFacts;
  /** Field names (snake_case) that changed. */
  changes: string[];
  previousStatus: string;
  previousEndDate: Date | null;
  /** Why the service changed it by itself (end_date_passed); null for a change someone made. */
  reason?: string | null;
}

interface Definition<I, D> {
  group: string;
  lists: readonly List[];
  description: string;
  data: (facts: I) => D;
  example: D;
}
// The groups: what a kind is about, as people name it (the picker's headings). Only for reading: a kind's name and
// data do not depend on its group.
const USERS = 'Users';
const SESSIONS = 'Sessions';
const ORGANIZATIONS = 'Organizations';
const MEMBERS = 'Members & invitations';
const OAUTH = 'OAuth clients & tokens';
const TWO_FACTOR = 'Two-factor';
const API_KEYS = 'API keys';
const SUBSCRIPTIONS = 'Subscriptions';

const kind = <I, D extends Record<string, unknown>>(
  group: string,
  lists: List[],
  description: string,
  data: (facts: I) => D,
  sample: NoInfer<I>,
): Definition<I, D> => ({ group, lists, description, data, example: data(sample) });

const iso = (date: Date | null) => date?.toISOString() ?? null;
const userRef = (u: UserRef) => ({ id: u.id, email: u.email, name: u.name });
const fullUser = (u: UserRecord) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  emailVerified: u.emailVerified,
  createdAt: u.createdAt.toISOString(),
});
const orgRef = (o: OrganizationRef) => ({ id: o.id, name: o.name });

// Sample facts for the examples.
const at = new Date('2026-01-01T00:00:00.000Z');
const sUser: UserRecord = {
  id: '0195f3a0-0000-7000-8000-000000000001',
  email: 'ada@example.com',
  name: 'Ada Lovelace',
  emailVerified: true,
  createdAt: at,
};
const sOrg = { id: '0195f3a0-0000-7000-8000-0000000000a1', name: 'Acme' };
const sClient = { id: '0195f3a0-0000-7000-8000-0000000000c1', clientId: 'tsc_example', name: 'Acme CRM' };
const sSession = {
  id: '0195f3a0-0000-7000-8000-0000000000e1',
  userId: sUser.id,
  createdAt: at,
  expiresAt: new Date('2026-01-08T00:00:00.000Z'),
};
const sInvitation = {
  id: '0195f3a0-0000-7000-8000-0000000000f1',
  email: sUser.email,
  role: 'member',
  invitedBy: '0195f3a0-0000-7000-8000-000000000002',
  expiresAt: sSession.expiresAt,
};
const sMember = { organization: sOrg, user: sUser, role: 'member' };
const sApiKey = { id: '0195f3a0-0000-7000-8000-0000000000e2', name: 'CI', role: 'member' };
const sSubscription: SubscriptionFacts = {
  id: '0195f3a0-0000-7000-8000-0000000000b1',
  organizationId: sOrg.id,
  productId: '0195f3a0-0000-7000-8000-0000000000d1',
  product: { id: '0195f3a0-0000-7000-8000-0000000000d1', slug: 'analytics', name: 'Analytics' },
  totalSeats: 10,
  assignedSeats: 3,
  pricePerSeat: 19.99,
  billingCycle: 'monthly',
  status: 'active',
  endDate: null,
  createdAt: at,
  updatedAt: at,
};
const sChange: SubscriptionChangeFacts = {
  subscription: sSubscription,
  changes: ['total_seats'],
  previousStatus: 'active',
  previousEndDate: null,
};

// Shapes shared by kinds of one list.
const userData = (f: { user: UserRecord }) => ({ user: fullUser(f.user) });
const userRefData = (f: { user: UserRef }) => ({ user: userRef(f.user) });
const memberA = (f: MemberFacts) => ({
  organizationId: f.organization.id,
  memberId: f.user.id,
  user: userRef(f.user),
  role: f.role,
});
const memberB = (f: MemberFacts) => ({
  organization_id: f.organization.id,
  member_id: f.user.id,
  user: userRef(f.user),
  role: f.role,
});
const invitationData = (f: { invitation: InvitationFacts }) => ({
  invitation: { ...invitationRef(f.invitation), expiresAt: f.invitation.expiresAt.toISOString() },
});
const invitationRef = (i: Omit<InvitationFacts, 'expiresAt'>) => ({
  id: i.id,
  email: i.email,
  role: i.role,
  invitedBy: i.invitedBy,
});
const clientA = (f: { client: ClientRef }) => ({
  client: { id: f.client.id, clientId: f.client.clientId, name: f.client.name },
});
const clientB = (f: { client: ClientRef }) => ({
  client: { id: f.client.id, client_id: f.client.clientId, name: f.client.name },
});
const sessionData = (f: { session: { id: string; userId: string; createdAt: Date; expiresAt: Date } }) => ({
  session: {
    id: f.session.id,
    userId: f.session.userId,
    createdAt: f.session.createdAt.toISOString(),
    expiresAt: f.session.expiresAt.toISOString(),
  },
});
const apiKeyData = (f: { apiKey: { id: string; name: string; role: string } }) => ({
  apiKey: { id: f.apiKey.id, name: f.apiKey.name, role: f.apiKey.role },
});

/** The subscription as list B events carry it (snake_case; money as a JSON number). */
export function subscriptionData(s: SubscriptionFacts) {
  return {
    id: s.id,
    organization_id: s.organizationId,
    product_id: s.productId,
    product: { id: s.product.id, slug: s.product.slug, name: s.product.name },
    total_seats: s.totalSeats,
    assigned_seats: s.assignedSeats,
    price_per_seat: typeof s.pricePerSeat === 'number' ? s.pricePerSeat : Number(s.pricePerSeat.toFixed(2)),
    billing_cycle: s.billingCycle,
    status: s.status,
    end_date: iso(s.endDate),
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}
const subscriptionChange = (f: SubscriptionChangeFacts) => ({
  subscription: subscriptionData(f.subscription),
  changes: f.changes,
  previous_status: f.previousStatus,
  previous_end_date: iso(f.previousEndDate),
  reason: f.reason ?? null,
});

export const EVENT_CATALOG = {
  // List A (and B for user.created, user.updated, user.deleted, organization.updated)
  'user.created': kind(USERS, ['A', 'B'], 'An account was created (by accepting an invitation).', userData, {
    user: sUser,
  }),
  'user.updated': kind(
    USERS,
    ['A', 'B'],
    'A profile changed (name, picture, e-mail, verification).',
    (f: { user: UserRecord; changes: string[] }) => ({ ...userData(f), changes: f.changes }),
    { user: sUser, changes: ['name'] },
  ),
  'user.deleted': kind(USERS, ['A', 'B'], 'An account was deleted.', userRefData, { user: sUser }),
  'user.email.verified': kind(USERS, ['A'], 'An e-mail address was marked verified.', userData, { user: sUser }),
  'user.password.changed': kind(
    USERS,
    ['A'],
    'A password changed; every other session and token of the user ended.',
    userRefData,
    { user: sUser },
  ),
  'session.created': kind(
    SESSIONS,
    ['A'],
    'A user signed in (or a new session replaced the current one).',
    sessionData,
    { session: sSession },
  ),
  'session.revoked': kind(
    SESSIONS,
    ['A'],
    'A session was ended by signing out.',
    (f: { session: { id: string; userId: string } }) => ({ session: { id: f.session.id, userId: f.session.userId } }),
    { session: sSession },
  ),
  'session.expired': kind(
    SESSIONS,
    ['A'],
    'A session reached its end of life while still signed in (announced by the worker within a minute or so).',
    sessionData,
    { session: sSession },
  ),
  'organization.created': kind(
    ORGANIZATIONS,
    ['A'],
    'An organization was created.',
    (f: { organization: OrganizationRef & { createdAt: Date } }) => ({
      organization: { ...orgRef(f.organization), createdAt: f.organization.createdAt.toISOString() },
    }),
    { organization: { ...sOrg, createdAt: at } },
  ),
  'organization.updated': kind(
    ORGANIZATIONS,
    ['A', 'B'],
    'An organization changed.',
    (f: { organization: OrganizationRef; changes: string[] }) => ({
      organization: orgRef(f.organization),
      changes: f.changes,
    }),
    { organization: sOrg, changes: ['name'] },
  ),
  'organization.deleted': kind(
    ORGANIZATIONS,
    ['A'],
    'An organization was deleted (with the account of its only member).',
    (f: { organization: OrganizationRef }) => ({ organization: orgRef(f.organization) }),
    { organization: sOrg },
  ),
  'member.added': kind(
    MEMBERS,
    ['A'],
    'Someone joined the organization (creating it, or accepting an invitation). Also sent as organization.member.added, with snake_case data.',
    memberA,
    sMember,
  ),
  'member.removed': kind(
    MEMBERS,
    ['A'],
    'Someone left or was removed from the organization (or deleted the account). Also sent as organization.member.removed, with snake_case data.',
    memberA,
    sMember,
  ),
  'member.role.changed': kind(
    MEMBERS,
    ['A'],
    "A member's role changed. Also sent as organization.member.role_changed, with snake_case data.",
    (f: RoleChangeFacts) => ({ ...memberA(f), previousRole: f.previousRole }),
    { ...sMember, role: 'admin', previousRole: 'member' },
  ),
  'member.invitation.sent': kind(MEMBERS, ['A'], 'An invitation was made.', invitationData, {
    invitation: sInvitation,
  }),
  'member.invitation.accepted': kind(
    MEMBERS,
    ['A'],
    'An invitation was accepted.',
    (f: { invitation: Omit<InvitationFacts, 'expiresAt'>; user: UserRef; organization: OrganizationRef }) => ({
      invitation: invitationRef(f.invitation),
      user: userRef(f.user),
      organization: orgRef(f.organization),
    }),
    { invitation: sInvitation, user: sUser, organization: sOrg },
  ),
  'member.invitation.expired': kind(MEMBERS, ['A'], 'An invitation expired unanswered.', invitationData, {
    invitation: sInvitation,
  }),
  'oauth.client.created': kind(
    OAUTH,
    ['A'],
    'An OAuth client was registered (or an app installed). Also sent as oauth_client.created, with snake_case data.',
    clientA,
    { client: sClient },
  ),
  'oauth.client.deleted': kind(
    OAUTH,
    ['A'],
    'An OAuth client was deleted (or an app uninstalled). Also sent as oauth_client.deleted, with snake_case data.',
    clientA,
    { client: sClient },
  ),
  'oauth.authorization.granted': kind(
    OAUTH,
    ['A'],
    'A user authorized a client: an authorization code was issued (at authorize or on consent).',
    (f: { client: ClientRef; user: { id: string }; scope: string }) => ({
      ...clientA(f),
      user: { id: f.user.id },
      scope: f.scope,
    }),
    { client: sClient, user: sUser, scope: 'openid email' },
  ),
  'oauth.token.issued': kind(
    OAUTH,
    ['A'],
    'Tokens were issued to a client (code exchange, refresh, client credentials).',
    (f: { client: Omit<ClientRef, 'name'>; user: { id: string } | null; scope: string; grantType: string }) => ({
      client: { id: f.client.id, clientId: f.client.clientId },
      user: f.user && { id: f.user.id },
      scope: f.scope,
      grantType: f.grantType,
    }),
    { client: sClient, user: sUser, scope: 'openid email', grantType: 'authorization_code' },
  ),
  '2fa.enabled': kind(
    TWO_FACTOR,
    ['A'],
    'A first second factor (an authenticator app or a passkey) was set up.',
    userRefData,
    { user: sUser },
  ),
  '2fa.disabled': kind(
    TWO_FACTOR,
    ['A'],
    'The last second factor was removed, by the person or by an owner resetting them.',
    userRefData,
    { user: sUser },
  ),
  'api_key.created': kind(API_KEYS, ['A'], 'An API key was created.', apiKeyData, { apiKey: sApiKey }),
  'api_key.revoked': kind(
    API_KEYS,
    ['A'],
    'An API key was revoked (by an admin, or because its creator left).',
    (f: { apiKey: { id: string; name: string } }) => ({ apiKey: { id: f.apiKey.id, name: f.apiKey.name } }),
    { apiKey: sApiKey },
  ),
  // List B
  'organization.member.added': kind(
    MEMBERS,
    ['B'],
    'Someone joined the organization (creating it, or accepting an invitation). Also sent as member.added, with camelCase data.',
    memberB,
    sMember,
  ),
  'organization.member.removed': kind(
    MEMBERS,
    ['B'],
    'Someone left or was removed from the organization (or deleted the account). Also sent as member.removed, with camelCase data.',
    memberB,
    sMember,
  ),
  'organization.member.role_changed': kind(
    MEMBERS,
    ['B'],
    "A member's role changed. Also sent as member.role.changed, with camelCase data.",
    (f: RoleChangeFacts) => ({ ...memberB(f), previous_role: f.previousRole }),
    { ...sMember, role: 'admin', previousRole: 'member' },
  ),
  'subscription.created': kind(
    SUBSCRIPTIONS,
    ['B'],
    'A subscription was created.',
    (f: { subscription: SubscriptionFacts }) => ({ subscription: subscriptionData(f.subscription) }),
    { subscription: sSubscription },
  ),
  'subscription.updated': kind(
    SUBSCRIPTIONS,
    ['B'],
    'A subscription changed (seats, price, status, end date), or expired at its end date.',
    subscriptionChange,
    sChange,
  ),
  'subscription.cancelled': kind(SUBSCRIPTIONS, ['B'], 'A subscription was cancelled.', subscriptionChange, {
    ...sChange,
    subscription: { ...sSubscription, status: 'cancelled' },
    changes: ['status'],
  }),
  'subscription.renewed': kind(
    SUBSCRIPTIONS,
    ['B'],
    'A subscription was renewed: its end date moved later.',
    subscriptionChange,
    { ...sChange, changes: ['end_date'], previousEndDate: at },
  ),
  'oauth_client.created': kind(
    OAUTH,
    ['B'],
    'An OAuth client was registered (or an app installed). Also sent as oauth.client.created, with camelCase data.',
    clientB,
    { client: sClient },
  ),
  'oauth_client.deleted': kind(
    OAUTH,
    ['B'],
    'An OAuth client was deleted (or an app uninstalled). Also sent as oauth.client.deleted, with camelCase data.',
    clientB,
    { client: sClient },
  ),
  'oauth_client.token_revoked': kind(
    OAUTH,
    ['B'],
    "A client revoked one of its tokens (RFC 7009): the token's grant ended.",
    (f: { client: Omit<ClientRef, 'name'>; grantId: string }) => ({
      client: { id: f.client.id, client_id: f.client.clientId },
      grant_id: f.grantId,
    }),
    { client: sClient, grantId: '0195f3a0-0000-7000-8000-0000000000a2' },
  ),
};

type Catalog = typeof EVENT_CATALOG;
export type EventKind = keyof Catalog;
/** The facts a kind's builder takes. */
export type EventFacts<K extends EventKind> = Parameters<Catalog[K]['data']>[0];
/** The data a kind's builder makes. */
export type EventData<K extends EventKind> = ReturnType<Catalog[K]['data']>;
/** Kinds about a person: one event per organization the user belongs to. */
export type UserEventKind = Extract<EventKind, `user.${string}` | `session.${string}` | `2fa.${string}`>;
export type OrganizationEventKind = Exclude<EventKind, UserEventKind>;

export const EVENT_KINDS = Object.keys(EVENT_CATALOG) as EventKind[];
export const isEventKind = (k: string): k is EventKind => Object.hasOwn(EVENT_CATALOG, k);
export const isUserEventKind = (k: EventKind): k is UserEventKind => /^(user|session|2fa)\./.test(k);

/** The catalog as GET /api/v1/event-types and the portal's picker show it. */
export const eventTypeList = () =>
  EVENT_KINDS.map((k) => {
    const { group, lists, description, example } = EVENT_CATALOG[k];
    return { kind: k, group, lists: [...lists], description, example: example };
  });
