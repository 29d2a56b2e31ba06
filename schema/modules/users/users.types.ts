import { builder } from '../../builder.ts';
import { pageType } from '../../lib/page-type.ts';

export const UserRef = builder.prismaObject('User', {
  fields: (t) => ({
    id: t.exposeID('id'),
    email: t.exposeString('email'),
    emailVerified: t.exposeBoolean('emailVerified'),
    name: t.exposeString('name'),
    picture: t.exposeString('picture', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

export const UserPageRef = pageType('UserPage', UserRef);
