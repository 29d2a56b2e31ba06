// Sign-in and the caller: login, logout, switching organization, the viewer query, and where the caller is signed in.
import { builder, RoleEnum } from '../../builder.ts';
import { UserError } from '../../errors/index.ts';
import type { Role } from '../../context.ts';
import { login, logout, switchOrganization, type LoginResult, type MfaChallenge } from './auth.service.ts';
import { listMySessions, revokeMySession, revokeOtherSessions, type PersonSession } from './sessions.service.ts';
import { viewer, type ViewerShape } from './viewer.service.ts';
import { issueDeviceCookie, type DeviceCookie } from './device-cookie.ts';

const UserSummary = builder.objectRef<{ id: string; email: string; name: string }>('UserSummary').implement({
  fields: (t) => ({ id: t.exposeID('id'), email: t.exposeString('email'), name: t.exposeString('name') }),
});

export const OrganizationMembershipRef = builder
  .objectRef<{ id: string; name: string; role: Role | null }>('OrganizationWithRole')
  .implement({
    description: "An organization with the caller's role in it.",
    fields: (t) => ({
      id: t.exposeID('id'),
      name: t.exposeString('name'),
      role: t.field({ type: RoleEnum, nullable: true, resolve: (o) => o.role }),
    }),
  });

const SessionInfo = builder.objectRef<LoginResult['session']>('SessionInfo').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    authTime: t.expose('authTime', { type: 'DateTime' }),
    organizationId: t.exposeString('organizationId', { nullable: true }),
  }),
});

export const OrganizationSummaryRef = builder.objectRef<{ id: string; name: string }>('OrganizationSummary').implement({
  fields: (t) => ({ id: t.exposeID('id'), name: t.exposeString('name') }),
});

const DeviceCookieRef = builder.objectRef<DeviceCookie>('DeviceCookie').implement({
  description:
    'A signed token naming the account signed in to, kept by the browser as the cookie tessera_device (Tessera sets it on its own sign-ins). ' +
    'While the client address is locked by wrong passwords, a sign-in to this account that carries it is still admitted.',
  fields: (t) => ({
    value: t.exposeString('value'),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
  }),
});

export const LoginPayloadRef = builder.objectRef<LoginResult>('LoginPayload').implement({
  description: 'A new session: the token works as a Bearer token and as the portal cookie.',
  fields: (t) => ({
    token: t.exposeString('token'),
    tokenType: t.string({ resolve: () => 'Bearer' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    session: t.field({ type: SessionInfo, resolve: (p) => p.session }),
    user: t.field({ type: UserSummary, resolve: (p) => p.user }),
    organization: t.field({ type: OrganizationMembershipRef, nullable: true, resolve: (p) => p.organization }),
    mfaEnrollmentRequired: t.exposeBoolean('mfaEnrollmentRequired', {
      description:
        'The organization requires a second factor and the person has none: set one up before anything else there.',
    }),
    deviceCookie: t.field({
      type: DeviceCookieRef,
      resolve: (login, _args, ctx) => issueDeviceCookie(ctx, login.user.email),
    }),
  }),
});

export const MfaChallengeRef = builder.objectRef<MfaChallenge>('MfaChallenge').implement({
  description:
    'The password was right and the account has a second factor: complete the sign-in with completeMfaLogin (or a passkey).',
  fields: (t) => ({
    mfaRequired: t.boolean({ resolve: () => true }),
    mfaToken: t.exposeString('mfaToken', { description: 'Single use, for 5 minutes, for this person only.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    methods: t.exposeStringList('methods', { description: 'totp, recovery_code, passkey.' }),
  }),
});

// The errors plugin wraps only an object type directly, so login's result union (the session, the challenge, or a
// problem the caller can correct) is spelled out under the name the plugin gave it before.
const LoginResultRef = builder.unionType('MutationLoginResult', {
  types: [LoginPayloadRef, MfaChallengeRef, UserError],
  resolveType: (outcome) =>
    outcome instanceof UserError ? 'UserError' : 'mfaToken' in outcome ? MfaChallengeRef : LoginPayloadRef,
});

/** A UserError as a member of the result union, as the errors plugin does; anything else stays an error. */
const userErrorAsResult = async <T>(work: Promise<T>): Promise<T | UserError> => {
  try {
    return await work;
  } catch (error) {
    if (error instanceof UserError) return error;
    throw error;
  }
};

export const ViewerRef = builder.objectRef<ViewerShape>('Viewer').implement({
  description: 'The signed-in person, the organization the request acts in, and their role.',
  fields: (t) => ({
    user: t.field({ type: UserSummary, resolve: (v) => v.user }),
    organization: t.field({ type: OrganizationMembershipRef, nullable: true, resolve: (v) => v.organization }),
    organizations: t.field({ type: [OrganizationMembershipRef], resolve: (v) => v.organizations }),
    platformAdmin: t.exposeBoolean('platformAdmin'),
    mfaEnrollmentRequired: t.exposeBoolean('mfaEnrollmentRequired', {
      description:
        "The current organization requires a second factor and this session's person has none: everything there is refused until one is set up.",
    }),
    session: t.field({ type: SessionInfo, nullable: true, resolve: (v) => v.session }),
  }),
});

const LoginInput = builder.inputType('LoginInput', {
  fields: (t) => ({ email: t.string({ required: true }), password: t.string({ required: true }) }),
});

builder.mutationField('login', (t) =>
  t.field({
    type: LoginResultRef,
    description:
      'Signs in with e-mail and password: a session, or for an account with a second factor an MfaChallenge. Repeated failures for one account or address are slowed down.',
    args: { input: t.arg({ type: LoginInput, required: true }) },
    resolve: (_root, { input }, ctx) => userErrorAsResult(login(ctx, input)),
  }),
);

builder.mutationField('logout', (t) =>
  t.boolean({ authScopes: { session: true }, resolve: (_root, _args, ctx) => logout(ctx) }),
);

builder.mutationField('switchOrganization', (t) =>
  t.field({
    errors: {},
    type: ViewerRef,
    nullable: true,
    authScopes: { session: true },
    args: { organizationId: t.arg.string({ required: true }) },
    resolve: async (_root, args, ctx) => viewer(await switchOrganization(ctx, args)),
  }),
);

builder.queryField('viewer', (t) =>
  t.field({
    type: ViewerRef,
    nullable: true,
    skipTypeScopes: true,
    authScopes: { profileRead: true },
    resolve: (_root, _args, ctx) => viewer(ctx),
  }),
);

const SessionRef = builder.objectRef<PersonSession>('Session').implement({
  description: 'One place the caller is signed in: a live session, with where it was made and when it was last used.',
  fields: (t) => ({
    id: t.exposeID('id'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', {
      type: 'DateTime',
      description: 'The last request made with it, to the minute.',
    }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    ip: t.exposeString('ip', { nullable: true, description: 'The client address that signed in.' }),
    userAgent: t.exposeString('userAgent', { nullable: true, description: 'The user agent that signed in.' }),
    organization: t.field({
      type: OrganizationSummaryRef,
      nullable: true,
      description: 'The organization it acts in.',
      resolve: (s) => s.organization,
    }),
    current: t.exposeBoolean('current', { description: 'The session this request came with.' }),
  }),
});

const RevokedSessionRef = builder.objectRef<{ id: string; current: boolean }>('RevokedSession').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    current: t.exposeBoolean('current', {
      description: 'It was the session this request came with: the caller is signed out.',
    }),
  }),
});

builder.queryField('mySessions', (t) =>
  t.field({
    type: [SessionRef],
    description: "The caller's live sessions, most recently used first (at most 100). Needs a session.",
    authScopes: { session: true },
    resolve: (_root, _args, ctx) => listMySessions(ctx),
  }),
);

builder.mutationField('revokeSession', (t) =>
  t.field({
    errors: {},
    type: RevokedSessionRef,
    description:
      "Ends one of the caller's sessions (the current one too, which signs out). Another person's is not found.",
    authScopes: { session: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => revokeMySession(ctx, args),
  }),
);

builder.mutationField('revokeOtherSessions', (t) =>
  t.int({
    description:
      'Signs out everywhere else: ends every session of the caller but the current one, and answers how many.',
    authScopes: { session: true },
    resolve: (_root, _args, ctx) => revokeOtherSessions(ctx),
  }),
);
