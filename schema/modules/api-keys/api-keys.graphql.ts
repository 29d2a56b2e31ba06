import { builder, RoleEnum } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { pageType } from '../../page-type.ts';
import { createApiKey, keyPrefix, listApiKeys, revokeApiKey } from './api-keys.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { API_KEYS_ERROR_CODES } from './api-keys.errors.ts';

const refusals = mutationErrors('ApiKeysErrorCode', API_KEYS_ERROR_CODES);

const ApiKeyRef = builder.prismaObject('ApiKey', {
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId'),
    name: t.exposeString('name'),
    keyPrefix: t.string({
      description: 'The start of the key, to recognise it: the whole key is shown only at creation.',
      resolve: (k) => keyPrefix(k.key),
    }),
    role: t.expose('role', { type: RoleEnum }),
    createdById: t.exposeString('createdById', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true }),
  }),
});

type Created = Awaited<ReturnType<typeof createApiKey>>;
const CreatedApiKeyRef = builder.objectRef<Created>('CreatedApiKey').implement({
  description: 'A new API key with its secret: the only time the key and the secret are shown.',
  fields: (t) => ({
    apiKey: t.field({ type: ApiKeyRef, resolve: (c) => c }),
    key: t.exposeString('key', { description: 'The public half, sent as the Bearer value.' }),
    secret: t.exposeString('secret'),
  }),
});

const CreateApiKeyInput = builder.inputType('CreateApiKeyInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    role: t.field({
      type: RoleEnum,
      description: "admin or member; defaults to the creator's role (admin for owners).",
    }),
    organizationId: t.string({ description: "Defaults to the caller's current organization." }),
  }),
});

builder.queryField('apiKeys', (t) =>
  t.field({
    type: pageType('ApiKeyPage', ApiKeyRef),
    authScopes: { authenticated: true },
    args: { organizationId: t.arg.string(), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { organizationId, ...page }, ctx) => listApiKeys(ctx, organizationId, page),
  }),
);

builder.mutationField('createApiKey', (t) =>
  t.field({
    errors: refusals,
    type: CreatedApiKeyRef,
    authScopes: firstParty(),
    args: { input: t.arg({ type: CreateApiKeyInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      createApiKey(ctx, {
        name: input.name,
        role: input.role ?? undefined,
        organizationId: input.organizationId ?? undefined,
      }),
  }),
);

builder.mutationField('revokeApiKey', (t) =>
  t.prismaField({
    errors: refusals,
    type: 'ApiKey',
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_query, _root, args, ctx) => revokeApiKey(ctx, { id: String(args.id) }),
  }),
);
