import { builder } from '../../builder.ts';
import { UserRef } from './users.types.ts';
import { LoginPayloadRef } from '../auth/auth.types.ts';
import { present } from '../../lib/input.ts';
import { deleteMe, deleteUser, updateMe, updateUser, type UpdateMeResult } from './users.service.ts';

const UpdateMeInput = builder.inputType('UpdateMeInput', {
  fields: (t) => ({
    name: t.string(),
    picture: t.string({ description: 'An https URL; null removes it.' }),
    email: t.string(),
    currentPassword: t.string({ description: 'Required to change the e-mail address or the password.' }),
    password: t.string({ description: 'The new password (12 characters or more). Ends every other session and token.' }),
  }),
});

const UpdateMePayload = builder.objectRef<UpdateMeResult>('UpdateMePayload').implement({
  fields: (t) => ({
    user: t.field({ type: UserRef, resolve: (p) => p.user }),
    login: t.field({ type: LoginPayloadRef, nullable: true, description: 'A fresh session after a password change.', resolve: (p) => p.login }),
  }),
});

const UpdateUserInput = builder.inputType('UpdateUserInput', {
  fields: (t) => ({ name: t.string(), picture: t.string(), emailVerified: t.boolean() }),
});

builder.mutationField('updateMe', (t) =>
  t.field({
    errors: {},
    type: UpdateMePayload,
    authScopes: { person: true },
    args: { input: t.arg({ type: UpdateMeInput, required: true }) },
    resolve: (_root, { input }, ctx) => updateMe(ctx, present(input)),
  }),
);

builder.mutationField('deleteMe', (t) =>
  t.boolean({ errors: { directResult: false }, authScopes: { session: true }, resolve: async (_root, _args, ctx) => !!(await deleteMe(ctx)) }),
);

builder.mutationField('updateUser', (t) =>
  t.field({
    errors: {},
    type: UserRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateUserInput, required: true }) },
    resolve: (_root, args, ctx) => updateUser(ctx, String(args.id), present(args.input)),
  }),
);

builder.mutationField('deleteUser', (t) =>
  t.boolean({
    errors: { directResult: false },
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, args, ctx) => !!(await deleteUser(ctx, String(args.id))),
  }),
);
