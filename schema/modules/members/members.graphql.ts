import { builder, RoleEnum } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { pageType } from '../../page-type.ts';
import { present } from '../../lib/input.ts';
import { LoginPayloadRef, MfaChallengeRef } from '../auth/auth.graphql.ts';
import { UserError } from '../../errors/index.ts';
import {
  changeMemberRole,
  hasSecondFactor,
  isManagedMember,
  listMembers,
  removeMember,
  transferOwnership,
} from './members.service.ts';
import {
  acceptInvitation,
  createInvitation,
  invitationStatus,
  listInvitations,
  previewInvitation,
  resendInvitation,
  revokeInvitation,
} from './invitations.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { MEMBERS_ERROR_CODES } from './members.errors.ts';

const refusals = mutationErrors('MembersErrorCode', MEMBERS_ERROR_CODES);

const MembershipRef = builder.prismaObject('Membership', {
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId'),
    userId: t.exposeString('userId'),
    role: t.expose('role', { type: RoleEnum }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    user: t.relation('user'),
    mfaEnabled: t.boolean({
      description: 'The member has a second factor (an authenticator app or a passkey).',
      resolve: (m, _a, ctx) => hasSecondFactor(ctx, m),
    }),
    managed: t.boolean({
      description:
        "The organization manages the member's account (its address is in a domain the organization verified): only then may its owners reset the member's second factors, and its directory change their address and name.",
      resolve: (m, _a, ctx) => isManagedMember(ctx, m),
    }),
  }),
});

const InvitationStatusEnum = builder.enumType('InvitationStatus', {
  values: ['pending', 'accepted', 'revoked', 'expired'] as const,
});

const InvitationRef = builder.prismaObject('Invitation', {
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId'),
    email: t.exposeString('email'),
    role: t.expose('role', { type: RoleEnum }),
    status: t.field({
      type: InvitationStatusEnum,
      resolve: (inv, _args, ctx) => invitationStatus(inv, ctx.clock.now()),
    }),
    invitedById: t.exposeString('invitedById', { nullable: true }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

type Created = Awaited<ReturnType<typeof createInvitation>>;
const CreatedInvitationRef = builder.objectRef<Created>('CreatedInvitation').implement({
  description:
    'A new invitation with a link to pass on (shown only now). The invitee is mailed a link of their own; this one joins too, but does not prove the address.',
  fields: (t) => ({
    invitation: t.field({ type: InvitationRef, resolve: (c) => c }),
    token: t.exposeString('token', {
      description: "The pass-on link's token: accepting with it does not verify the address.",
    }),
    acceptUrl: t.exposeString('acceptUrl', {
      description: 'The link to pass on: it joins, but does not verify the address (the mailed link does).',
    }),
  }),
});

const orgAdmin = (_p: unknown, args: { organizationId: string }) => ({
  orgRole: { organizationId: args.organizationId, role: 'admin' as const },
});
/** An invitation's link outlives the token that would ask for it (docs/architecture.md#authorization). */
const orgAdminFirstParty = (p: unknown, args: { organizationId: string }) => firstParty(orgAdmin(p, args));

builder.queryField('members', (t) =>
  t.field({
    type: pageType('MembershipPage', MembershipRef),
    authScopes: orgAdmin,
    args: { organizationId: t.arg.string({ required: true }), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { organizationId, ...page }, ctx) => listMembers(ctx, organizationId, page),
  }),
);

builder.queryField('invitations', (t) =>
  t.field({
    type: pageType('InvitationPage', InvitationRef),
    authScopes: orgAdmin,
    args: { organizationId: t.arg.string({ required: true }), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { organizationId, ...page }, ctx) => listInvitations(ctx, organizationId, page),
  }),
);

builder.mutationField('changeMemberRole', (t) =>
  t.prismaField({
    errors: refusals,
    type: 'Membership',
    authScopes: orgAdmin,
    args: {
      organizationId: t.arg.string({ required: true }),
      userId: t.arg.string({ required: true }),
      role: t.arg({ type: RoleEnum, required: true }),
    },
    resolve: (_query, _root, args, ctx) => changeMemberRole(ctx, args.organizationId, args.userId, { role: args.role }),
  }),
);

builder.mutationField('transferOwnership', (t) =>
  t.prismaField({
    errors: refusals,
    type: 'Membership',
    description:
      "Makes a member an owner and, unless stepDown is false, the calling owner an admin, in one change (owners only). Answers the new owner's membership.",
    authScopes: orgAdmin,
    args: {
      organizationId: t.arg.string({ required: true }),
      userId: t.arg.string({ required: true }),
      stepDown: t.arg.boolean(),
    },
    resolve: (_query, _root, args, ctx) =>
      transferOwnership(ctx, args.organizationId, args.userId, present({ stepDown: args.stepDown })),
  }),
);

builder.mutationField('removeMember', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    description: 'Removes a member (admins), or leaves the organization (the member itself).',
    authScopes: { authenticated: true },
    args: { organizationId: t.arg.string({ required: true }), userId: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => removeMember(ctx, args.organizationId, args.userId),
  }),
);

const InvitationInput = builder.inputType('CreateInvitationInput', {
  fields: (t) => ({ email: t.string({ required: true }), role: t.field({ type: RoleEnum }) }),
});

builder.mutationField('createInvitation', (t) =>
  t.field({
    errors: refusals,
    type: CreatedInvitationRef,
    authScopes: orgAdminFirstParty,
    args: { organizationId: t.arg.string({ required: true }), input: t.arg({ type: InvitationInput, required: true }) },
    resolve: (_root, args, ctx) =>
      createInvitation(ctx, args.organizationId, { email: args.input.email, role: args.input.role ?? undefined }),
  }),
);

builder.mutationField('resendInvitation', (t) =>
  t.field({
    errors: refusals,
    type: CreatedInvitationRef,
    description: 'Mails a pending invitation again with a new link, valid 7 days from now; the old link stops working.',
    authScopes: orgAdminFirstParty,
    args: { organizationId: t.arg.string({ required: true }), invitationId: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => resendInvitation(ctx, args.organizationId, args.invitationId),
  }),
);

builder.mutationField('revokeInvitation', (t) =>
  t.prismaField({
    errors: refusals,
    type: 'Invitation',
    authScopes: orgAdmin,
    args: { organizationId: t.arg.string({ required: true }), invitationId: t.arg.string({ required: true }) },
    resolve: (_query, _root, args, ctx) => revokeInvitation(ctx, args.organizationId, args.invitationId),
  }),
);

type Preview = NonNullable<Awaited<ReturnType<typeof previewInvitation>>>;
const InvitationPreviewRef = builder.objectRef<Preview>('InvitationPreview').implement({
  description: 'An invitation as its link shows it before accepting. The details are given only while it is pending.',
  fields: (t) => ({
    status: t.expose('status', { type: InvitationStatusEnum }),
    organizationName: t.string({
      nullable: true,
      resolve: (p) => ('organizationName' in p ? p.organizationName : null),
    }),
    inviterName: t.string({
      nullable: true,
      description: 'Who invited: their name, else their address; null once their account is gone.',
      resolve: (p) => ('inviterName' in p ? p.inviterName : null),
    }),
    email: t.string({
      nullable: true,
      description: 'The invited address.',
      resolve: (p) => ('email' in p ? p.email : null),
    }),
    role: t.field({ type: RoleEnum, nullable: true, resolve: (p) => ('role' in p ? p.role : null) }),
    expiresAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => ('expiresAt' in p ? p.expiresAt : null) }),
    accountExists: t.boolean({
      nullable: true,
      description: 'Whether the invited address has an account, which accepts with its password.',
      resolve: (p) => ('accountExists' in p ? p.accountExists : null),
    }),
  }),
});

builder.queryField('invitationPreview', (t) =>
  t.field({
    type: InvitationPreviewRef,
    nullable: true,
    description:
      'What an invitation link is for, to whoever holds it (no sign-in needed); null for a token that is not one.',
    args: { token: t.arg.string({ required: true }) },
    resolve: (_root, { token }, ctx) => previewInvitation(ctx, token),
  }),
);

const AcceptInput = builder.inputType('AcceptInvitationInput', {
  fields: (t) => ({ token: t.string({ required: true }), name: t.string(), password: t.string() }),
});

// A session, or for an account with a second factor the login's MfaChallenge, or a problem the caller can correct.
// The errors plugin wraps only an object type, so the union is spelled out; pothosErrorTypes has the plugin turn
// a thrown UserError into a member of it, as it does for its own unions.
const AcceptResultRef = builder.unionType('MutationAcceptInvitationResult', {
  types: [LoginPayloadRef, MfaChallengeRef, UserError],
  description: refusals.union.description,
  extensions: { ...refusals.union.extensions, pothosErrorTypes: [UserError] },
  resolveType: (outcome) =>
    'mfaToken' in outcome ? MfaChallengeRef : 'session' in outcome && 'token' in outcome ? LoginPayloadRef : UserError,
});

builder.mutationField('acceptInvitation', (t) =>
  t.field({
    type: AcceptResultRef,
    description:
      "Joins with an invitation token: creates the account (name and password), or joins in the invitee's session. With the password of an existing account it signs in as login does: an MfaChallenge for an account with a second factor (complete it with completeMfaLogin, then accept signed in).",
    // Callable signed out (a new account), but no access token: it proves none of these, and must not become a
    // session in another organization.
    authScopes: { firstParty: true },
    args: { input: t.arg({ type: AcceptInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      acceptInvitation(ctx, {
        token: input.token,
        name: input.name ?? undefined,
        password: input.password ?? undefined,
      }),
  }),
);
