import { builder } from '../../builder.ts';
import { UserPageRef, UserRef } from './users.types.ts';
import { getMe, getUser, listUsers } from './users.service.ts';

builder.queryField('me', (t) =>
  t.field({
    type: UserRef,
    // DESIGN 4: a token with openid, profile or email reads its user's profile without `api`.
    skipTypeScopes: true,
    authScopes: { $all: { person: true, profileRead: true } },
    resolve: (_root, _args, ctx) => getMe(ctx),
  }),
);

builder.queryField('users', (t) =>
  t.field({
    type: UserPageRef,
    description: 'Users the caller may see: all for platform admins, else itself and the members of organizations it administers.',
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
