// The documented REST shapes (snake_case, docs/architecture.md#rest-conventions) and the GraphQL selections they
// are made from.
export const USER_FIELDS = 'id email emailVerified name picture createdAt updatedAt';
export const presentUser = (u: any) => ({
  id: u.id,
  email: u.email,
  email_verified: u.emailVerified,
  name: u.name,
  picture: u.picture ?? null,
  created_at: u.createdAt,
  updated_at: u.updatedAt,
});

/** The caller's own record: a new address it asked for shows until it is proven. */
export const ME_FIELDS = `${USER_FIELDS} pendingEmail`;
export const presentMe = (u: any) => ({ ...presentUser(u), pending_email: u.pendingEmail ?? null });

export const ORGANIZATION_FIELDS = 'id name role isOperator requireMfa createdAt updatedAt';
export const presentOrganization = (o: any) => ({
  id: o.id,
  name: o.name,
  role: o.role ?? null,
  is_operator: o.isOperator,
  require_mfa: o.requireMfa,
  created_at: o.createdAt,
  updated_at: o.updatedAt,
});

export const LOGIN_FIELDS =
  'token tokenType expiresAt session { id createdAt expiresAt } user { id email name } organization { id name role } mfaEnrollmentRequired deviceCookie { value expiresAt }';
/** The cookies a sign-in sets (mountRoutes): the session's, and the device cookie, which the body does not carry. */
export const loginSession = (l: any) => ({ token: l.token, expiresAt: l.expiresAt, device: l.deviceCookie });
export const presentLogin = (l: any) => ({
  token: l.token,
  token_type: l.tokenType,
  expires_at: l.expiresAt,
  user: l.user,
  organization: l.organization ?? null,
  ...(l.mfaEnrollmentRequired ? { mfa_enrollment_required: true } : {}),
});

export const MEMBER_FIELDS = `id organizationId userId role createdAt mfaEnabled user { ${USER_FIELDS} }`;
export const presentMember = (m: any) => ({
  user_id: m.userId,
  organization_id: m.organizationId,
  role: m.role,
  joined_at: m.createdAt,
  mfa_enabled: m.mfaEnabled,
  user: { id: m.user.id, email: m.user.email, name: m.user.name, email_verified: m.user.emailVerified },
});

export const INVITATION_FIELDS = 'id organizationId email role status invitedById expiresAt createdAt';
export const presentInvitation = (i: any) => ({
  id: i.id,
  organization_id: i.organizationId,
  email: i.email,
  role: i.role,
  status: i.status,
  invited_by: i.invitedById ?? null,
  expires_at: i.expiresAt,
  created_at: i.createdAt,
});

export const API_KEY_FIELDS = 'id organizationId name keyPrefix role createdById createdAt lastUsedAt';
export const presentApiKey = (k: any) => ({
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
export const presentPage = (
  name: string,
  page: { items: unknown[]; nextCursor: string | null },
  present: (x: any) => unknown,
) => ({
  [name]: page.items.map(present),
  next_cursor: page.nextCursor,
});
