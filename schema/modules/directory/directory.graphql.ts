import { builder, RoleEnum } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { present } from '../../lib/input.ts';
import {
  createGroupMapping,
  createScimToken,
  deleteGroupMapping,
  listGroupMappings,
  listScimRequests,
  listScimTokens,
  revokeScimToken,
} from './directory.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { DIRECTORY_ERROR_CODES } from './directory.errors.ts';

const refusals = mutationErrors('DirectoryErrorCode', DIRECTORY_ERROR_CODES);

const ScimTokenRef = builder.prismaObject('ScimToken', {
  description: "A directory's SCIM bearer token; the token itself is shown only at creation.",
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId'),
    name: t.exposeString('name'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true, description: 'To the minute.' }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true }),
  }),
});

type Created = Awaited<ReturnType<typeof createScimToken>>;
const CreatedScimTokenRef = builder.objectRef<Created>('CreatedScimToken').implement({
  fields: (t) => ({
    scimToken: t.field({ type: ScimTokenRef, resolve: (c) => c }),
    token: t.exposeString('token', { description: 'The Bearer value for /scim/v2: shown this once.' }),
  }),
});

const DirectoryGroupMappingRef = builder.prismaObject('DirectoryGroupMapping', {
  description: 'What a directory group (by display name) gives its members: a role, or a seat of a subscription.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId'),
    group: t.exposeString('groupName'),
    role: t.expose('role', { type: RoleEnum, nullable: true }),
    subscriptionId: t.exposeString('subscriptionId', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const ScimRequestRef = builder.prismaObject('ScimRequest', {
  description: "A request of the organization's directory and how it ended.",
  fields: (t) => ({
    id: t.exposeID('id'),
    method: t.exposeString('method'),
    path: t.exposeString('path'),
    status: t.exposeInt('status'),
    scimType: t.exposeString('scimType', { nullable: true }),
    detail: t.exposeString('detail', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

builder.queryField('scimTokens', (t) =>
  t.field({
    type: [ScimTokenRef],
    authScopes: { authenticated: true },
    args: { organizationId: t.arg.string() },
    resolve: (_root, { organizationId }, ctx) => listScimTokens(ctx, organizationId),
  }),
);

builder.mutationField('createScimToken', (t) =>
  t.field({
    description: 'Owners only: a directory decides who joins and with what role.',
    errors: refusals,
    type: CreatedScimTokenRef,
    authScopes: firstParty(),
    args: { name: t.arg.string({ required: true }), organizationId: t.arg.string() },
    resolve: (_root, { name, organizationId }, ctx) =>
      createScimToken(ctx, { name, ...(organizationId ? { organizationId } : {}) }),
  }),
);

builder.mutationField('revokeScimToken', (t) =>
  t.field({
    type: ScimTokenRef,
    description: 'Owners only.',
    authScopes: firstParty(),
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, { id }, ctx) => revokeScimToken(ctx, id),
  }),
);

builder.queryField('directoryGroupMappings', (t) =>
  t.field({
    type: [DirectoryGroupMappingRef],
    authScopes: { authenticated: true },
    args: { organizationId: t.arg.string() },
    resolve: (_root, { organizationId }, ctx) => listGroupMappings(ctx, organizationId),
  }),
);

const CreateDirectoryGroupMappingInput = builder.inputType('CreateDirectoryGroupMappingInput', {
  fields: (t) => ({
    group: t.string({ required: true, description: "The directory group's display name." }),
    role: t.field({ type: RoleEnum, description: 'The role its members get; or subscriptionId.' }),
    subscriptionId: t.string({ description: 'The subscription whose seats its members get; or role.' }),
    organizationId: t.string(),
  }),
});

builder.mutationField('createDirectoryGroupMapping', (t) =>
  t.field({
    errors: refusals,
    type: DirectoryGroupMappingRef,
    authScopes: firstParty(),
    args: { input: t.arg({ type: CreateDirectoryGroupMappingInput, required: true }) },
    resolve: (_root, { input }, ctx) => createGroupMapping(ctx, present(input)),
  }),
);

builder.mutationField('deleteDirectoryGroupMapping', (t) =>
  t.boolean({
    authScopes: firstParty(),
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, { id }, ctx) => deleteGroupMapping(ctx, id),
  }),
);

builder.queryField('scimRequests', (t) =>
  t.field({
    type: [ScimRequestRef],
    authScopes: { authenticated: true },
    description: "The directory's last 100 requests, newest first.",
    args: { organizationId: t.arg.string() },
    resolve: (_root, { organizationId }, ctx) => listScimRequests(ctx, organizationId),
  }),
);
