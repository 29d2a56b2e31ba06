import { builder } from '../../builder.ts';
import { LoginPayloadRef, ViewerRef } from './auth.types.ts';
import { login, logout, switchOrganization } from './auth.service.ts';
import { viewer } from './viewer.service.ts';

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
