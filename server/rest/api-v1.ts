// Routes under /api/v1: sign-in and session, the caller's profile and organizations, API keys, invitations, the audit
// trail; the account flows and mail log (accounts.ts).
import { ForbiddenError } from '../../schema/errors/index.ts';
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, onlyFields, page, route, type RestRoute } from './route.ts';
import {
  API_KEY_FIELDS,
  LOGIN_FIELDS,
  ME_FIELDS,
  loginSession,
  presentApiKey,
  presentLogin,
  presentMe,
  presentPage,
} from './presenters.ts';
import { seatRoutes, subscriptionRoutes } from './subscriptions.ts';
import { licenseRoutes } from './licenses.ts';
import { webhookRoutes } from './webhooks.ts';
import { appRoutes } from './apps.ts';
import { accountRoutes } from './accounts.ts';
import { passkeyRoutes } from './passkeys.ts';
import { MFA_CHALLENGE_FIELDS, mfaRoutes, presentMfaChallenge } from './mfa.ts';
import { domainRoutes } from './domains.ts';
import { connectionRoutes } from './connections.ts';
import { directoryRoutes } from './directory.ts';

const REVOKE_API_KEY = graphql(
  `mutation($id: ID!) { revokeApiKey(id: $id) { __typename ... on ApiKey { id } ...UserErrorFields } }`,
  [USER_ERROR_FIELDS],
);

const AUDIT_LOG_FIELDS = graphql(
  `fragment AuditLogFields on AuditLog { id organizationId actor { type id name email } action targetType targetId outcome ip userAgent details createdAt }`,
);
const presentAuditLog = (e: ResultOf<typeof AUDIT_LOG_FIELDS>) => ({
  id: e.id,
  organization_id: e.organizationId,
  actor: e.actor,
  action: e.action,
  target_type: e.targetType,
  target_id: e.targetId,
  outcome: e.outcome,
  ip: e.ip,
  user_agent: e.userAgent,
  details: e.details,
  created_at: e.createdAt,
});

const SESSION_FIELDS = graphql(
  `fragment SessionFields on Session { id createdAt lastUsedAt expiresAt ip userAgent organization { id name } current }`,
);
const presentSession = (s: ResultOf<typeof SESSION_FIELDS>) => ({
  id: s.id,
  created_at: s.createdAt,
  last_used_at: s.lastUsedAt,
  expires_at: s.expiresAt,
  ip: s.ip,
  user_agent: s.userAgent,
  organization: s.organization,
  current: s.current,
});

export const apiV1Routes: RestRoute[] = [
  route({
    method: 'POST',
    path: '/auth/login',
    public: true,
    summary: 'Sign in with e-mail and password',
    operation: graphql(
      `mutation($input: LoginInput!) { login(input: $input) { __typename ...LoginFields ...MfaChallengeFields ...UserErrorFields } }`,
      [LOGIN_FIELDS, MFA_CHALLENGE_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['email', 'password']) }),
    respond: (d) => {
      const login = unwrap(d.login);
      // The password was right; no session until the second factor (POST /api/v1/auth/login/mfa).
      if (login.__typename === 'MfaChallenge') return { body: presentMfaChallenge(login) };
      return { body: presentLogin(login), session: loginSession(login) };
    },
  }),
  route({
    method: 'GET',
    path: '/auth/session',
    summary: 'The current session, user and organization',
    operation: graphql(
      `query { viewer { user { id email name } organization { id name role } platformAdmin session { id createdAt expiresAt } } }`,
    ),
    respond: (d) => {
      if (!d.viewer) throw new ForbiddenError('An API key has no session: sign in, or use an OAuth access token');
      const v = d.viewer;
      return {
        body: {
          user: v.user,
          organization: v.organization,
          platform_admin: v.platformAdmin,
          session: v.session
            ? { id: v.session.id, created_at: v.session.createdAt, expires_at: v.session.expiresAt }
            : null,
        },
      };
    },
  }),
  route({
    method: 'POST',
    path: '/auth/logout',
    summary: 'End the current session',
    body: false,
    operation: graphql(`mutation { logout }`),
    respond: () => ({ status: 204, session: null }),
  }),
  route({
    method: 'GET',
    path: '/auth/sessions',
    summary: 'Where the caller is signed in: its live sessions, most recently used first',
    operation: graphql(`query { mySessions { ...SessionFields } }`, [SESSION_FIELDS]),
    respond: (d) => ({ body: { sessions: d.mySessions.map(presentSession) } }),
  }),
  route({
    method: 'DELETE',
    path: '/auth/sessions/:id',
    summary: "End one of the caller's sessions (ending the current one signs out)",
    operation: graphql(
      `mutation($id: ID!) { revokeSession(id: $id) { __typename ... on RevokedSession { id current } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.revokeSession).current ? { status: 204, session: null } : { status: 204 }),
  }),
  route({
    method: 'DELETE',
    path: '/auth/sessions',
    summary: 'Sign out everywhere else: end every session but the current one',
    operation: graphql(`mutation { revokeOtherSessions }`),
    respond: (d) => ({ body: { revoked: d.revokeOtherSessions } }),
  }),
  route({
    method: 'GET',
    path: '/orgs',
    summary: "The caller's organizations with its role in each",
    operation: graphql(`query { myOrganizations { id name role } }`),
    respond: (d) => ({ body: d.myOrganizations }),
  }),
  route({
    method: 'GET',
    path: '/users/me',
    summary: 'The current user profile',
    operation: graphql(`query { me { ...MeFields } }`, [ME_FIELDS]),
    respond: (d) => ({ body: presentMe(d.me) }),
  }),
  route({
    method: 'PATCH',
    path: '/users/me',
    summary:
      'Update the profile; a new password or address needs current_password; a new address takes effect once the link mailed there is used',
    operation: graphql(
      `mutation($input: UpdateMeInput!) { updateMe(input: $input) { __typename ... on UpdateMePayload { user { ...MeFields } login { ...LoginFields } } ...UserErrorFields } }`,
      [ME_FIELDS, LOGIN_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({
      input: fromBody(body, ['name', 'picture', 'email', 'current_password', 'password']),
    }),
    respond: (d) => {
      const r = unwrap(d.updateMe);
      return r.login ? { body: presentLogin(r.login), session: loginSession(r.login) } : { body: presentMe(r.user) };
    },
  }),
  route({
    method: 'DELETE',
    path: '/users/me',
    summary: 'Delete the account (with your password or a code)',
    body: true,
    operation: graphql(
      `mutation($input: FreshProofInput) { deleteMe(input: $input) { __typename ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['password', 'code']) }),
    respond: (d) => (unwrap(d.deleteMe), { status: 204, session: null }),
  }),
  route({
    method: 'GET',
    path: '/api-keys',
    summary: "The organization's API keys (the key and the secret are never shown again)",
    operation: graphql(
      `query($org: String, $limit: Int, $cursor: String) { apiKeys(organizationId: $org, limit: $limit, cursor: $cursor) { items { ...ApiKeyFields } nextCursor } }`,
      [API_KEY_FIELDS],
    ),
    variables: ({ query }) => ({ org: query.organization_id, ...page(query) }),
    respond: (d) => ({ body: presentPage('api_keys', d.apiKeys, presentApiKey) }),
  }),
  route({
    method: 'POST',
    path: '/api-keys',
    summary: 'Create an API key; key and secret are shown only in this response',
    operation: graphql(
      `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { __typename ... on CreatedApiKey { key secret apiKey { ...ApiKeyFields } } ...UserErrorFields } }`,
      [API_KEY_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['name', 'role', 'organization_id']) }),
    respond: (d) => {
      const r = unwrap(d.createApiKey);
      return { status: 201, body: { ...presentApiKey(r.apiKey), key: r.key, secret: r.secret } };
    },
  }),
  route({
    method: 'DELETE',
    path: '/api-keys',
    summary: 'Revoke an API key named by `id` in the body or the query',
    body: true,
    operation: REVOKE_API_KEY,
    variables: ({ body, query }) => ({ id: onlyFields(body, ['id']).id ?? query.id }),
    respond: (d) => (unwrap(d.revokeApiKey), { status: 204 }),
  }),
  route({
    method: 'DELETE',
    path: '/api-keys/:id',
    summary: 'Revoke an API key',
    operation: REVOKE_API_KEY,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.revokeApiKey), { status: 204 }),
  }),
  route({
    method: 'POST',
    path: '/invitations/accept',
    public: true,
    summary:
      'Accept an invitation: creates the account (name, password), joins with the signed-in one, or signs in with the password as login does (mfa_required for an account with a second factor)',
    operation: graphql(
      `mutation($input: AcceptInvitationInput!) { acceptInvitation(input: $input) { __typename ...LoginFields ...MfaChallengeFields ...UserErrorFields } }`,
      [LOGIN_FIELDS, MFA_CHALLENGE_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['token', 'name', 'password']) }),
    respond: (d) => {
      const login = unwrap(d.acceptInvitation);
      // As at login: no session until the second factor; the invitation stays pending, accepted then signed in.
      if (login.__typename === 'MfaChallenge') return { body: presentMfaChallenge(login) };
      return { body: presentLogin(login), session: loginSession(login) };
    },
  }),
  route({
    method: 'GET',
    path: '/audit-logs',
    summary: 'The audit trail, newest first, filtered',
    operation: graphql(
      `query($org: String, $actor: String, $action: String, $targetType: String, $targetId: String, $outcome: String, $from: String, $to: String, $limit: Int, $cursor: String) { auditLogs(organizationId: $org, actor: $actor, action: $action, targetType: $targetType, targetId: $targetId, outcome: $outcome, from: $from, to: $to, limit: $limit, cursor: $cursor) { items { ...AuditLogFields } nextCursor } }`,
      [AUDIT_LOG_FIELDS],
    ),
    variables: ({ query }) => ({
      org: query.organization_id,
      actor: query.actor,
      action: query.action,
      targetType: query.target_type,
      targetId: query.target_id,
      outcome: query.outcome,
      from: query.from,
      to: query.to,
      ...page(query),
    }),
    respond: (d) => ({ body: presentPage('audit_logs', d.auditLogs, presentAuditLog) }),
  }),
  ...accountRoutes,
  ...passkeyRoutes,
  ...mfaRoutes,
  ...domainRoutes,
  ...connectionRoutes,
  ...directoryRoutes,
  ...subscriptionRoutes,
  ...seatRoutes,
  ...licenseRoutes,
  ...webhookRoutes,
  ...appRoutes,
];
