// Sign-in and the caller: login, logout, switching organization, and the viewer query.
import { builder } from '../../builder.ts';
import type { Role } from '../../context.ts';
import { login, logout, switchOrganization, type LoginResult } from './auth.service.ts';
import { viewer, type ViewerShape } from './viewer.service.ts';

export const RoleEnum = builder.enumType('Role', { values: ['owner', 'admin', 'member'] as const });

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

export const LoginPayloadRef = builder.objectRef<LoginResult>('LoginPayload').implement({
  description: 'A new session: the token works as a Bearer token and as the portal cookie.',
  fields: (t) => ({
    token: t.exposeString('token'),
    tokenType: t.string({ resolve: () => 'Bearer' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    session: t.field({ type: SessionInfo, resolve: (p) => p.session }),
    user: t.field({ type: UserSummary, resolve: (p) => p.user }),
    organization: t.field({ type: OrganizationMembershipRef, nullable: true, resolve: (p) => p.organization }),
  }),
});

export const ViewerRef = builder.objectRef<ViewerShape>('Viewer').implement({
  description: 'The signed-in person, the organization the request acts in, and their role.',
  fields: (t) => ({
    user: t.field({ type: UserSummary, resolve: (v) => v.user }),
    organization: t.field({ type: OrganizationMembershipRef, nullable: true, resolve: (v) => v.organization }),
    organizations: t.field({ type: [OrganizationMembershipRef], resolve: (v) => v.organizations }),
    platformAdmin: t.exposeBoolean('platformAdmin'),
    session: t.field({ type: SessionInfo, nullable: true, resolve: (v) => v.session }),
  }),
});

const LoginInput = builder.inputType('LoginInput', {
  fields: (t) => ({ email: t.string({ required: true }), password: t.string({ required: true }) }),
});

builder.mutationField('login', (t) =>
  t.field({
    errors: {},
    type: LoginPayloadRef,
    description: 'Signs in with e-mail and password. Repeated failures for one account or address are slowed down.',
    args: { input: t.arg({ type: LoginInput, required: true }) },
    resolve: (_root, { input }, ctx) => login(ctx, input),
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
  t.field({ type: ViewerRef, nullable: true, skipTypeScopes: true, authScopes: { profileRead: true }, resolve: (_root, _args, ctx) => viewer(ctx) }),
);
