// Sessions: the caller's own list of where they are signed in, and ending one or all but the current one.
import { builder } from '../../builder.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { SESSIONS_ERROR_CODES } from './sessions.errors.ts';
import { OrganizationSummaryRef } from '../organizations/organizations.graphql.ts';
import {
  listMySessions,
  revokeMySession,
  revokeOtherSessions,
  type IssuedSession,
  type PersonSession,
} from './sessions.service.ts';

const refusals = mutationErrors('SessionsErrorCode', SESSIONS_ERROR_CODES);

export const SessionInfoRef = builder.objectRef<IssuedSession['session']>('SessionInfo').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
    authTime: t.expose('authTime', { type: 'DateTime' }),
    organizationId: t.exposeString('organizationId', { nullable: true }),
  }),
});

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
    errors: refusals,
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
