// Users: the User type, the me/user/users queries, and profile and account mutations.
import { builder } from '../../builder.ts';
import { pageType } from '../../page-type.ts';
import { present } from '../../lib/input.ts';
import { LoginPayloadRef } from '../auth/auth.graphql.ts';
import { pendingEmailOf } from '../accounts/accounts.service.ts';
import { FreshProofInput } from '../mfa/mfa.graphql.ts';
import {
  deleteMe,
  deleteUser,
  getMe,
  getUser,
  listUsers,
  updateMe,
  updateUser,
  type UpdateMeResult,
} from './users.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { USERS_ERROR_CODES } from './users.errors.ts';

const refusals = mutationErrors('UsersErrorCode', USERS_ERROR_CODES);

const UserRef = builder.prismaObject('User', {
  fields: (t) => ({
    id: t.exposeID('id'),
    email: t.exposeString('email'),
    emailVerified: t.exposeBoolean('emailVerified'),
    pendingEmail: t.string({
      nullable: true,
      description:
        'A new address the user asked for, in effect once the link mailed there is used. Shown to the user only.',
      resolve: (user, _args, ctx) =>
        ctx.actor?.kind !== 'apiKey' && ctx.actor?.userId === user.id
          ? pendingEmailOf(ctx.db, user.id, ctx.clock.now())
          : null,
    }),
    name: t.exposeString('name'),
    picture: t.exposeString('picture', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const UserPageRef = pageType('UserPage', UserRef);

builder.queryField('me', (t) =>
  t.field({
    type: UserRef,
    // docs/architecture.md#authorization: a token with openid, profile or email reads its user's profile without `api`.
    skipTypeScopes: true,
    authScopes: { $all: { person: true, profileRead: true } },
    resolve: (_root, _args, ctx) => getMe(ctx),
  }),
);

builder.queryField('users', (t) =>
  t.field({
    type: UserPageRef,
    description:
      'Users the caller may see: all for platform admins, else itself and the members of organizations it administers.',
    authScopes: { authenticated: true },
    args: { limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, args, ctx) => listUsers(ctx, { limit: args.limit ?? undefined, cursor: args.cursor ?? undefined }),
  }),
);

builder.queryField('user', (t) =>
  t.field({
    type: UserRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => getUser(ctx, String(args.id)),
  }),
);

const UpdateMeInput = builder.inputType('UpdateMeInput', {
  fields: (t) => ({
    name: t.string(),
    picture: t.string({ description: 'An https URL; null removes it.' }),
    email: t.string({
      description: 'A new address: mailed a link, and in effect once it is used (pendingEmail until then).',
    }),
    currentPassword: t.string({ description: 'Required to change the e-mail address or the password.' }),
    password: t.string({
      description: 'The new password (12 characters or more). Ends every other session and token.',
    }),
  }),
});

const UpdateMePayload = builder.objectRef<UpdateMeResult>('UpdateMePayload').implement({
  fields: (t) => ({
    user: t.field({ type: UserRef, resolve: (p) => p.user }),
    login: t.field({
      type: LoginPayloadRef,
      nullable: true,
      description: 'A fresh session after a password change.',
      resolve: (p) => p.login,
    }),
  }),
});

const UpdateUserInput = builder.inputType('UpdateUserInput', {
  fields: (t) => ({ name: t.string(), picture: t.string(), emailVerified: t.boolean() }),
});

builder.mutationField('updateMe', (t) =>
  t.field({
    errors: refusals,
    type: UpdateMePayload,
    authScopes: { person: true },
    args: { input: t.arg({ type: UpdateMeInput, required: true }) },
    resolve: (_root, { input }, ctx) => updateMe(ctx, present(input)),
  }),
);

builder.mutationField('deleteMe', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    description: "Deletes the caller's account; needs a fresh proof (the password or a code).",
    authScopes: { session: true },
    args: { input: t.arg({ type: FreshProofInput, required: false }) },
    resolve: async (_root, { input }, ctx) => !!(await deleteMe(ctx, input ?? {})),
  }),
);

builder.mutationField('updateUser', (t) =>
  t.field({
    errors: refusals,
    type: UserRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateUserInput, required: true }) },
    resolve: (_root, args, ctx) => updateUser(ctx, String(args.id), present(args.input)),
  }),
);

builder.mutationField('deleteUser', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    description:
      "Deletes a user (platform admins); one's own account as deleteMe does: not with an access token, and with a fresh proof (the password or a code).",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: FreshProofInput, required: false }) },
    resolve: async (_root, args, ctx) => !!(await deleteUser(ctx, String(args.id), args.input ?? {})),
  }),
);
