// The documented REST shapes (snake_case, docs/architecture.md#rest-conventions) and the GraphQL selections they
// are made from: each presenter reads the fragment beside it.
import { graphql, type ResultOf } from '../graphql/typed.ts';

export const USER_FIELDS = graphql(
  `fragment UserFields on User { id email emailVerified name picture createdAt updatedAt }`,
);
export const presentUser = (u: ResultOf<typeof USER_FIELDS>) => ({
  id: u.id,
  email: u.email,
  email_verified: u.emailVerified,
  name: u.name,
  picture: u.picture ?? null,
  created_at: u.createdAt,
  updated_at: u.updatedAt,
});

/** The caller's own record: a new address it asked for shows until it is proven. */
export const ME_FIELDS = graphql(`fragment MeFields on User { ...UserFields pendingEmail }`, [USER_FIELDS]);
export const presentMe = (u: ResultOf<typeof ME_FIELDS>) => ({
  ...presentUser(u),
  pending_email: u.pendingEmail ?? null,
});

export const ORGANIZATION_FIELDS = graphql(
  `fragment OrganizationFields on Organization { id name role isOperator requireMfa allowMetadataClients createdAt updatedAt }`,
);
export const presentOrganization = (o: ResultOf<typeof ORGANIZATION_FIELDS>) => ({
  id: o.id,
  name: o.name,
  role: o.role ?? null,
  is_operator: o.isOperator,
  require_mfa: o.requireMfa,
  allow_metadata_clients: o.allowMetadataClients,
  created_at: o.createdAt,
  updated_at: o.updatedAt,
});

export const LOGIN_FIELDS = graphql(
  `fragment LoginFields on LoginPayload { token tokenType expiresAt session { id createdAt expiresAt } user { id email name } organization { id name role } mfaEnrollmentRequired deviceCookie { value expiresAt } }`,
);
type Login = ResultOf<typeof LOGIN_FIELDS>;
/** The cookies a sign-in sets (mountRoutes): the session's, and the device cookie, which the body does not carry. */
export const loginSession = (l: Login) => ({ token: l.token, expiresAt: l.expiresAt, device: l.deviceCookie });
export const presentLogin = (l: Login) => ({
  token: l.token,
  token_type: l.tokenType,
  expires_at: l.expiresAt,
  user: l.user,
  organization: l.organization ?? null,
  ...(l.mfaEnrollmentRequired ? { mfa_enrollment_required: true } : {}),
});

export const MEMBER_FIELDS = graphql(
  `fragment MemberFields on Membership { id organizationId userId role createdAt mfaEnabled user { ...UserFields } }`,
  [USER_FIELDS],
);
export const presentMember = (m: ResultOf<typeof MEMBER_FIELDS>) => ({
  user_id: m.userId,
  organization_id: m.organizationId,
  role: m.role,
  joined_at: m.createdAt,
  mfa_enabled: m.mfaEnabled,
  user: { id: m.user.id, email: m.user.email, name: m.user.name, email_verified: m.user.emailVerified },
});

export const INVITATION_FIELDS = graphql(
  `fragment InvitationFields on Invitation { id organizationId email role status invitedById expiresAt createdAt }`,
);
export const presentInvitation = (i: ResultOf<typeof INVITATION_FIELDS>) => ({
  id: i.id,
  organization_id: i.organizationId,
  email: i.email,
  role: i.role,
  status: i.status,
  invited_by: i.invitedById ?? null,
  expires_at: i.expiresAt,
  created_at: i.createdAt,
});

export const API_KEY_FIELDS = graphql(
  `fragment ApiKeyFields on ApiKey { id organizationId name keyPrefix role createdById createdAt lastUsedAt }`,
);
export const presentApiKey = (k: ResultOf<typeof API_KEY_FIELDS>) => ({
  id: k.id,
  name: k.name,
  key_prefix: k.keyPrefix,
  role: k.role,
  organization_id: k.organizationId,
  created_by: k.createdById ?? null,
  created_at: k.createdAt,
  last_used_at: k.lastUsedAt ?? null,
});

/** A list keeps its documented top-level name and gains `next_cursor`. */
export const presentPage = <Item, Shown>(
  name: string,
  page: { items: readonly Item[]; nextCursor: string | null },
  present: (item: Item) => Shown,
) => ({
  [name]: page.items.map(present),
  next_cursor: page.nextCursor,
});
