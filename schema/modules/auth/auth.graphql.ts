// Sign-in and the caller: login, logout, switching organization and the viewer query.
import { builder, RoleEnum } from '../../builder.ts';
import { UserError } from '../../errors/index.ts';
import type { Role } from '../../context.ts';
import { login, logout, switchOrganization, type LoginResult, type MfaChallenge } from './auth.service.ts';
import { SessionInfoRef } from '../sessions/sessions.graphql.ts';
import { viewer, type ViewerShape } from './viewer.service.ts';
import { issueDeviceCookie, type DeviceCookie } from './device-cookie.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { AUTH_ERROR_CODES } from './auth.errors.ts';

const refusals = mutationErrors('AuthErrorCode', AUTH_ERROR_CODES);

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
    session: t.field({ type: SessionInfoRef, resolve: (p) => p.session }),
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
  ...refusals.union,
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
    session: t.field({ type: SessionInfoRef, nullable: true, resolve: (v) => v.session }),
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
    errors: refusals,
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
