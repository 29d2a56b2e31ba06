// OAuth clients as their organization's admins manage them, and the apps a user has connected (remembered consents).
import { builder, type InputFields } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { pageType } from '../../page-type.ts';
import { present } from '../../lib/input.ts';
import {
  createClient,
  deleteClient,
  getClient,
  listClients,
  rotateClientSecret,
  updateClient,
} from './clients.service.ts';
import { connectedApps, revokeConnectedApp } from './consents.service.ts';
import { createRegistrationToken, deleteRegistrationToken, listRegistrationTokens } from './registration.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { CLIENTS_ERROR_CODES } from './clients.errors.ts';

const refusals = mutationErrors('ClientsErrorCode', CLIENTS_ERROR_CODES);

const OAuthClientRef = builder.prismaObject('OAuthClient', {
  fields: (t) => ({
    id: t.exposeID('id'),
    clientId: t.exposeString('clientId'),
    organizationId: t.exposeString('organizationId'),
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    redirectUris: t.exposeStringList('redirectUris'),
    postLogoutRedirectUris: t.exposeStringList('postLogoutRedirectUris'),
    allowedOrigins: t.exposeStringList('allowedOrigins'),
    resources: t.exposeStringList('resources', {
      description: 'The resources (RFC 8707) it may ask access tokens for: each a possible aud of its access tokens.',
    }),
    allowedScopes: t.exposeStringList('allowedScopes'),
    grantTypes: t.exposeStringList('grantTypes'),
    idTokenSignedResponseAlg: t.exposeString('idTokenSignedResponseAlg'),
    enabled: t.exposeBoolean('enabled'),
    consentRequired: t.exposeBoolean('consentRequired'),
    tokenEndpointAuthMethod: t.exposeString('tokenEndpointAuthMethod', {
      description: 'client_secret_post, or none: a public client, which keeps no secret and must use PKCE (S256).',
    }),
    registeredByItself: t.boolean({
      description: 'Registered by the app itself with an initial access token (RFC 7591), not by an admin.',
      resolve: (c) => c.registrationTokenHash !== null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

type WithSecret = Awaited<ReturnType<typeof rotateClientSecret>> | Awaited<ReturnType<typeof createClient>>;
const ClientWithSecretRef = builder.objectRef<WithSecret>('OAuthClientWithSecret').implement({
  description: 'A client with its secret: shown only when created or rotated. A public client has none.',
  fields: (t) => ({
    client: t.field({ type: OAuthClientRef, resolve: (c) => c }),
    clientSecret: t.exposeString('clientSecret', { nullable: true }),
  }),
});

const clientInputFields = (t: InputFields, create: boolean) => ({
  name: t.string({ required: create }),
  description: t.string(),
  redirectUris: t.stringList(),
  postLogoutRedirectUris: t.stringList(),
  allowedOrigins: t.stringList(),
  resources: t.stringList(),
  allowedScopes: t.stringList({ required: create }),
  grantTypes: t.stringList(),
  idTokenSignedResponseAlg: t.string(),
  enabled: t.boolean(),
  consentRequired: t.boolean(),
});

const CreateClientInput = builder.inputType('CreateOAuthClientInput', {
  fields: (t) => ({
    ...clientInputFields(t, true),
    organizationId: t.string(),
    tokenEndpointAuthMethod: t.string({
      description:
        'client_secret_post (the default), or none for an app that cannot keep a secret. Fixed once registered.',
    }),
  }),
});
const UpdateClientInput = builder.inputType('UpdateOAuthClientInput', { fields: (t) => clientInputFields(t, false) });

builder.queryField('oauthClients', (t) =>
  t.field({
    type: pageType('OAuthClientPage', OAuthClientRef),
    description: "An organization's OAuth clients (its admins). Defaults to the caller's organization.",
    authScopes: { authenticated: true },
    args: { organizationId: t.arg.string(), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { organizationId, ...page }, ctx) => listClients(ctx, organizationId, page),
  }),
);

builder.queryField('oauthClient', (t) =>
  t.prismaField({
    type: 'OAuthClient',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true, description: 'The record id or the client_id.' }) },
    resolve: (_q, _root, args, ctx) => getClient(ctx, String(args.id)),
  }),
);

builder.mutationField('createOAuthClient', (t) =>
  t.field({
    errors: refusals,
    type: ClientWithSecretRef,
    authScopes: firstParty(),
    args: { input: t.arg({ type: CreateClientInput, required: true }) },
    resolve: (_root, { input }, ctx) => createClient(ctx, present(input)),
  }),
);

builder.mutationField('updateOAuthClient', (t) =>
  t.prismaField({
    errors: refusals,
    type: 'OAuthClient',
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateClientInput, required: true }) },
    resolve: (_q, _root, args, ctx) => updateClient(ctx, String(args.id), present(args.input)),
  }),
);

builder.mutationField('rotateOAuthClientSecret', (t) =>
  t.field({
    errors: refusals,
    type: ClientWithSecretRef,
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => rotateClientSecret(ctx, String(args.id)),
  }),
);

builder.mutationField('deleteOAuthClient', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => deleteClient(ctx, String(args.id)),
  }),
);

// Initial access tokens (RFC 7591 3): with one, an app registers its own client at POST /oauth/register.
type RegistrationToken = Awaited<ReturnType<typeof listRegistrationTokens>>[number] & { token?: string };
const RegistrationTokenRef = builder.objectRef<RegistrationToken>('RegistrationToken').implement({
  description:
    'An initial access token: an app that holds it registers its own client in the organization (POST /oauth/register).',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId'),
    name: t.exposeString('name'),
    scopes: t.exposeStringList('scopes', { description: 'The most a client registered with it may be given.' }),
    public: t.exposeBoolean('public', { description: 'Clients registered with it are public (no secret, PKCE).' }),
    token: t.string({
      nullable: true,
      description: 'The token itself: shown only when it is created.',
      resolve: (r) => r.token ?? null,
    }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

builder.queryField('registrationTokens', (t) =>
  t.field({
    type: [RegistrationTokenRef],
    description: "An organization's initial access tokens, newest first (its admins). Defaults to the caller's.",
    authScopes: { authenticated: true },
    args: { organizationId: t.arg.string() },
    resolve: (_root, { organizationId }, ctx) => listRegistrationTokens(ctx, organizationId),
  }),
);

const CreateRegistrationTokenInput = builder.inputType('CreateRegistrationTokenInput', {
  fields: (t) => ({
    organizationId: t.string(),
    name: t.string({ required: true }),
    scopes: t.stringList({ required: true }),
    public: t.boolean({ description: 'Whether the clients it registers are public; false when left out.' }),
  }),
});

builder.mutationField('createRegistrationToken', (t) =>
  t.field({
    errors: refusals,
    type: RegistrationTokenRef,
    authScopes: firstParty(),
    args: { input: t.arg({ type: CreateRegistrationTokenInput, required: true }) },
    resolve: (_root, { input }, ctx) => createRegistrationToken(ctx, present(input)),
  }),
);

builder.mutationField('deleteRegistrationToken', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => deleteRegistrationToken(ctx, String(args.id)),
  }),
);

type App = Awaited<ReturnType<typeof connectedApps>>[number];
const ConnectedAppRef = builder.objectRef<App>('ConnectedApp').implement({
  description: 'An application the user has approved, with the permissions it was given.',
  fields: (t) => ({
    clientId: t.string({ resolve: (a) => a.client.clientId }),
    name: t.string({ resolve: (a) => a.client.name }),
    description: t.string({ resolve: (a) => a.client.description }),
    scopes: t.exposeStringList('scopes'),
    grantedAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true }),
  }),
});

builder.queryField('connectedApps', (t) =>
  t.field({
    type: [ConnectedAppRef],
    authScopes: { person: true },
    resolve: (_root, _args, ctx) => connectedApps(ctx),
  }),
);

builder.mutationField('revokeConnectedApp', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    authScopes: firstParty({ person: true }),
    args: { clientId: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => revokeConnectedApp(ctx, args.clientId),
  }),
);
