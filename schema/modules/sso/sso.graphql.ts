import { builder, RoleEnum, type InputFields } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { present } from '../../lib/input.ts';
import { LoginPayloadRef } from '../auth/auth.graphql.ts';
import { acsUrl, callbackUrl, metadataUrl } from './protocol.ts';
import {
  createConnection,
  deleteConnection,
  getConnection,
  listConnections,
  updateConnection,
  type ConnectionView,
} from './connections.service.ts';
import {
  completeSsoSignIn,
  myIdentities,
  samlMetadata,
  socialProviders,
  ssoTestResult,
  startSsoSignIn,
  unlinkIdentity,
  type SsoOutcome,
  type SsoStart,
} from './sso.service.ts';
import { ssoRouteFor, ssoRouteForDomain, type SsoRoute } from '../auth/home-realm.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { SSO_ERROR_CODES } from './sso.errors.ts';

const refusals = mutationErrors('SsoErrorCode', SSO_ERROR_CODES);

const SsoConnectionRef = builder.objectRef<ConnectionView>('SsoConnection').implement({
  description:
    "An identity provider people sign in through: an organization's (oidc, saml) or platform-wide (oidc, github).",
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeString('organizationId', {
      nullable: true,
      description: 'Null for a platform-wide connection.',
    }),
    type: t.exposeString('type', { description: 'oidc, saml or github.' }),
    name: t.exposeString('name'),
    enabled: t.exposeBoolean('enabled', { description: 'Switched off, its sign-ins stop at once.' }),
    domains: t.exposeStringList('domains', { description: 'The verified domains whose addresses sign in here.' }),
    defaultRole: t.expose('defaultRole', { type: RoleEnum }),
    requireSso: t.exposeBoolean('requireSso', { description: 'Passwords stop working for addresses of its domains.' }),
    seatSubscriptionId: t.exposeString('seatSubscriptionId', {
      nullable: true,
      description: 'A seat of this subscription on the first sign-in, while one is left.',
    }),
    roleClaim: t.exposeString('roleClaim', {
      nullable: true,
      description: 'The claim (OIDC) or attribute (SAML) whose values give the role at each sign-in.',
    }),
    roleMap: t.field({
      type: 'JSON',
      nullable: true,
      resolve: (c) => c.roleMap,
      description: '{"<value>": "owner" | "admin" | "member"}.',
    }),
    issuer: t.exposeString('issuer', { nullable: true }),
    clientId: t.exposeString('clientId', { nullable: true }),
    hasClientSecret: t.exposeBoolean('hasClientSecret', { description: 'The secret itself is never shown.' }),
    scopes: t.exposeStringList('scopes'),
    entryPoint: t.exposeString('entryPoint', { nullable: true }),
    idpEntityId: t.exposeString('idpEntityId', { nullable: true }),
    idpCertificates: t.int({
      resolve: (c) => c.idpCerts.length,
      description: 'How many signing certificates of the IdP are trusted.',
    }),
    callbackUrl: t.string({
      nullable: true,
      resolve: (c, _a, ctx) => (c.type === 'saml' ? null : callbackUrl(ctx, c.id)),
      description: 'The redirect URI to register with the provider.',
    }),
    acsUrl: t.string({
      nullable: true,
      resolve: (c, _a, ctx) => (c.type === 'saml' ? acsUrl(ctx, c.id) : null),
      description: 'SAML: the assertion consumer service.',
    }),
    metadataUrl: t.string({
      nullable: true,
      resolve: (c, _a, ctx) => (c.type === 'saml' ? metadataUrl(ctx, c.id) : null),
      description: 'SAML: the service provider metadata, also the entity id.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const ConnectionFields = (t: InputFields) => ({
  name: t.string(),
  enabled: t.boolean(),
  domains: t.stringList(),
  defaultRole: t.field({ type: RoleEnum }),
  requireSso: t.boolean(),
  seatSubscriptionId: t.string(),
  roleClaim: t.string(),
  roleMap: t.field({ type: 'JSON' }),
  issuer: t.string(),
  clientId: t.string(),
  clientSecret: t.string(),
  scopes: t.stringList(),
  metadataXml: t.string({ description: "SAML: the IdP's metadata (EntityDescriptor)." }),
  entryPoint: t.string(),
  idpCert: t.string(),
  idpEntityId: t.string(),
});

const CreateSsoConnectionInput = builder.inputType('CreateSsoConnectionInput', {
  fields: (t) => ({
    type: t.string({ required: true, description: 'oidc, saml or github.' }),
    organizationId: t.string({ description: "Defaults to the caller's current organization." }),
    platform: t.boolean({ description: 'A platform-wide connection (platform admins): a button on /login.' }),
    ...ConnectionFields(t),
  }),
});

const UpdateSsoConnectionInput = builder.inputType('UpdateSsoConnectionInput', { fields: (t) => ConnectionFields(t) });

builder.queryField('ssoConnections', (t) =>
  t.field({
    type: [SsoConnectionRef],
    authScopes: { authenticated: true },
    args: {
      organizationId: t.arg.string(),
      platform: t.arg.boolean({ description: 'The platform-wide connections (platform admins).' }),
    },
    resolve: (_root, args, ctx) => listConnections(ctx, args),
  }),
);

builder.queryField('ssoConnection', (t) =>
  t.field({
    type: SsoConnectionRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, { id }, ctx) => getConnection(ctx, id),
  }),
);

builder.mutationField('createSsoConnection', (t) =>
  t.field({
    description:
      "Owners of the organization only (platform admins for a platform-wide one): no role it gives may be above the author's.",
    errors: refusals,
    type: SsoConnectionRef,
    authScopes: firstParty(),
    args: { input: t.arg({ type: CreateSsoConnectionInput, required: true }) },
    resolve: (_root, { input }, ctx) => createConnection(ctx, present(input)),
  }),
);

builder.mutationField('updateSsoConnection', (t) =>
  t.field({
    description:
      "Owners of the organization only (platform admins for a platform-wide one): no role it gives may be above the author's.",
    errors: refusals,
    type: SsoConnectionRef,
    authScopes: firstParty(),
    args: { id: t.arg.string({ required: true }), input: t.arg({ type: UpdateSsoConnectionInput, required: true }) },
    resolve: (_root, { id, input }, ctx) => updateConnection(ctx, id, present(input)),
  }),
);

builder.mutationField('deleteSsoConnection', (t) =>
  t.boolean({
    description: 'Owners of the organization only (platform admins for a platform-wide one).',
    authScopes: firstParty(),
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, { id }, ctx) => deleteConnection(ctx, id),
  }),
);

const SsoRouteRef = builder.objectRef<SsoRoute>('SsoRoute').implement({
  description: 'The connection an address or a domain signs in through.',
  fields: (t) => ({
    connectionId: t.exposeID('connectionId'),
    name: t.exposeString('name'),
    requireSso: t.exposeBoolean('requireSso', { description: 'Passwords do not work for this address.' }),
  }),
});

builder.queryField('ssoRoute', (t) =>
  t.field({
    type: SsoRouteRef,
    nullable: true,
    description: 'Home-realm discovery: the connection serving the domain of `email` (or `domain`), if any.',
    args: { email: t.arg.string(), domain: t.arg.string() },
    resolve: (_root, { email, domain }, ctx) =>
      email ? ssoRouteFor(ctx, email.slice(0, 320)) : domain ? ssoRouteForDomain(ctx, domain) : null,
  }),
);

const SocialProviderRef = builder.objectRef<{ id: string; name: string; type: string }>('SocialProvider').implement({
  fields: (t) => ({ id: t.exposeID('id'), name: t.exposeString('name'), type: t.exposeString('type') }),
});

builder.queryField('socialProviders', (t) =>
  t.field({
    type: [SocialProviderRef],
    description: 'The platform-wide connections, as buttons on /login.',
    resolve: (_root, _args, ctx) => socialProviders(ctx),
  }),
);

const SsoStartRef = builder.objectRef<SsoStart>('SsoStart').implement({
  fields: (t) => ({
    url: t.exposeString('url', { description: "The identity provider's URL to send the browser to." }),
    browserToken: t.exposeString('browserToken', {
      description: 'Set as a cookie for the callback: the sign-in must come back to this browser.',
    }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime' }),
  }),
});

const StartSsoSignInInput = builder.inputType('StartSsoSignInInput', {
  fields: (t) => ({
    connectionId: t.string({ required: true }),
    returnTo: t.string({ description: 'A path on this site to go to afterwards.' }),
    loginHint: t.string(),
    test: t.boolean({ description: "An admin's test: shows the claims received and signs nobody in." }),
    link: t.boolean({ description: "Connect a platform-wide provider to the signed-in person's account." }),
  }),
});

builder.mutationField('startSsoSignIn', (t) =>
  t.field({
    errors: refusals,
    type: SsoStartRef,
    args: { input: t.arg({ type: StartSsoSignInInput, required: true }) },
    resolve: (_root, { input }, ctx) => startSsoSignIn(ctx, present(input)),
  }),
);

const SsoSignedInRef = builder.objectRef<Extract<SsoOutcome, { kind: 'signedIn' }>>('SsoSignedIn').implement({
  fields: (t) => ({
    login: t.field({ type: LoginPayloadRef, resolve: (o) => o.login }),
    returnTo: t.exposeString('returnTo', { nullable: true }),
  }),
});

const SsoTestedRef = builder.objectRef<Extract<SsoOutcome, { kind: 'tested' }>>('SsoTested').implement({
  fields: (t) => ({ resultId: t.exposeString('resultId', { description: 'Read it with ssoTestResult.' }) }),
});

const SsoLinkedRef = builder.objectRef<Extract<SsoOutcome, { kind: 'linked' }>>('SsoLinked').implement({
  description: "The provider's account is now connected to the signed-in person's: it signs them in from now on.",
  fields: (t) => ({ connectionName: t.exposeString('connectionName') }),
});

// A refusal is a top-level error whose code is sso_failed and whose details name the reason (expired_request,
// wrong_browser, invalid_response...; SsoSignInError's `reason`): graphql-js raises an Error a resolver returns, so it
// cannot be a member here.
const SsoSignInResultRef = builder.unionType('SsoSignInResult', {
  types: [SsoSignedInRef, SsoTestedRef, SsoLinkedRef],
  resolveType: (o) => (o.kind === 'tested' ? SsoTestedRef : o.kind === 'linked' ? SsoLinkedRef : SsoSignedInRef),
});

const CompleteSsoSignInInput = builder.inputType('CompleteSsoSignInInput', {
  fields: (t) => ({
    connectionId: t.string({ required: true }),
    state: t.string({ description: 'OIDC state or SAML RelayState.' }),
    browserToken: t.string(),
    callbackUrl: t.string({ description: 'OIDC and GitHub: the callback URL as the browser requested it.' }),
    samlResponse: t.string(),
  }),
});

builder.mutationField('completeSsoSignIn', (t) =>
  t.field({
    type: SsoSignInResultRef,
    args: { input: t.arg({ type: CompleteSsoSignInInput, required: true }) },
    resolve: (_root, { input }, ctx) => completeSsoSignIn(ctx, present(input)),
  }),
);

const SsoTestResultRef = builder.objectRef<Awaited<ReturnType<typeof ssoTestResult>>>('SsoTestResult').implement({
  description: 'What a test sign-in received from the identity provider.',
  fields: (t) => ({
    id: t.exposeID('id'),
    connectionId: t.string({ resolve: (r) => r.connection.id }),
    connectionName: t.string({ resolve: (r) => r.connection.name }),
    subject: t.exposeString('subject'),
    email: t.exposeString('email', { nullable: true }),
    emailVerified: t.exposeBoolean('emailVerified'),
    name: t.exposeString('name', { nullable: true }),
    role: t.field({
      type: RoleEnum,
      nullable: true,
      resolve: (r) => r.role,
      description: 'The role this person would get.',
    }),
    claims: t.field({ type: 'JSON', resolve: (r) => r.claims }),
  }),
});

builder.queryField('ssoTestResult', (t) =>
  t.field({
    type: SsoTestResultRef,
    authScopes: { session: true },
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, { id }, ctx) => ssoTestResult(ctx, id),
  }),
);

builder.queryField('samlMetadata', (t) =>
  t.string({
    nullable: true,
    description: "A SAML connection's service provider metadata (XML); null for another kind or an unknown id.",
    args: { connectionId: t.arg.string({ required: true }) },
    resolve: (_root, { connectionId }, ctx) => samlMetadata(ctx, connectionId),
  }),
);

const SsoIdentityRef = builder.objectRef<Awaited<ReturnType<typeof myIdentities>>[number]>('SsoIdentity').implement({
  description: "A platform-wide provider connected to the caller's account.",
  fields: (t) => ({
    id: t.exposeID('id'),
    connectionId: t.string({ resolve: (i) => i.connection.id }),
    name: t.string({ resolve: (i) => i.connection.name }),
    type: t.string({ resolve: (i) => i.connection.type }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastSignInAt: t.expose('lastSignInAt', { type: 'DateTime' }),
  }),
});

builder.queryField('mySsoIdentities', (t) =>
  t.field({ type: [SsoIdentityRef], authScopes: { session: true }, resolve: (_root, _args, ctx) => myIdentities(ctx) }),
);

builder.mutationField('unlinkSsoIdentity', (t) =>
  t.boolean({
    authScopes: { session: true },
    args: { id: t.arg.string({ required: true }) },
    resolve: (_root, { id }, ctx) => unlinkIdentity(ctx, id),
  }),
);
