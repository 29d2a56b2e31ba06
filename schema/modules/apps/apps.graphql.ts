import { builder } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { present } from '../../lib/input.ts';
import { pageType } from '../../page-type.ts';
import {
  createApp,
  deleteApp,
  getApp,
  getInstallation,
  installApp,
  launchUrl,
  listApps,
  listInstallations,
  rotateAppSecret,
  uninstallApp,
  updateApp,
} from './apps.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { APPS_ERROR_CODES } from './apps.errors.ts';

const refusals = mutationErrors('AppsErrorCode', APPS_ERROR_CODES);

const AppRef = builder.prismaObject('App', {
  description: 'A marketplace app (never with its signing secret: that is shown at registration and rotation only).',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    webhookUrl: t.exposeString('webhookUrl', {
      description: 'Where installs and uninstalls are announced (signed POST).',
    }),
    redirectUris: t.exposeStringList('redirectUris', { description: 'The first one is where a launch returns to.' }),
    scopes: t.exposeStringList('scopes'),
    homepageUrl: t.exposeString('homepageUrl', { nullable: true }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

type WithSecret = Awaited<ReturnType<typeof createApp>>;
const AppWithSecretRef = builder.objectRef<WithSecret>('AppWithSecret').implement({
  description: 'An app with its signing secret: shown only when registered or rotated.',
  fields: (t) => ({
    app: t.field({ type: AppRef, resolve: (r) => r.app }),
    signingSecret: t.exposeString('signingSecret'),
  }),
});

type InstallationRow = Awaited<ReturnType<typeof getInstallation>>;
const InstallationRef = builder
  .objectRef<
    Pick<InstallationRow, 'id' | 'appId' | 'organizationId' | 'createdAt' | 'app'> & { client: { clientId: string } }
  >('Installation')
  .implement({
    description: 'An app installed in an organization, with the OAuth client made for it.',
    fields: (t) => ({
      id: t.exposeID('id'),
      appId: t.exposeString('appId'),
      organizationId: t.exposeString('organizationId'),
      clientId: t.string({
        description: 'The client_id of the OAuth client made for this installation.',
        resolve: (i) => i.client.clientId,
      }),
      launchUrl: t.string({
        description: 'Opens the app with single sign-on: the authorization URL, state = the organization id.',
        resolve: (i, _a, ctx) => launchUrl(ctx, i),
      }),
      installedAt: t.field({ type: 'DateTime', resolve: (i) => i.createdAt }),
      app: t.field({ type: AppRef, resolve: (i) => i.app }),
    }),
  });

const CreateAppInput = builder.inputType('CreateAppInput', {
  fields: (t) => ({
    name: t.string({ required: true }),
    description: t.string(),
    webhookUrl: t.string({ required: true, description: 'https only; it must not resolve to a private address.' }),
    redirectUris: t.stringList({ required: true }),
    scopes: t.stringList({ required: true }),
    homepageUrl: t.string(),
  }),
});
const UpdateAppInput = builder.inputType('UpdateAppInput', {
  fields: (t) => ({
    name: t.string(),
    description: t.string(),
    webhookUrl: t.string(),
    redirectUris: t.stringList(),
    scopes: t.stringList(),
    homepageUrl: t.string(),
  }),
});

builder.queryField('apps', (t) =>
  t.field({
    type: pageType('AppPage', AppRef),
    description: 'The marketplace catalog, oldest first.',
    authScopes: { authenticated: true },
    args: { limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, args, ctx) => listApps(ctx, present(args)),
  }),
);

builder.queryField('app', (t) =>
  t.field({
    type: AppRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => getApp(ctx, String(id)),
  }),
);

builder.queryField('installations', (t) =>
  t.field({
    type: pageType('InstallationPage', InstallationRef),
    description: "An organization's installed apps (every member). Defaults to the caller's organization.",
    authScopes: { authenticated: true },
    args: { organizationId: t.arg.string(), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { organizationId, ...page }, ctx) => listInstallations(ctx, organizationId, page),
  }),
);

builder.queryField('installation', (t) =>
  t.field({
    type: InstallationRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => getInstallation(ctx, String(id)),
  }),
);

builder.mutationField('createApp', (t) =>
  t.field({
    errors: refusals,
    type: AppWithSecretRef,
    authScopes: firstParty({ platformAdmin: true }),
    args: { input: t.arg({ type: CreateAppInput, required: true }) },
    resolve: (_root, { input }, ctx) => createApp(ctx, present(input)),
  }),
);

builder.mutationField('updateApp', (t) =>
  t.field({
    errors: refusals,
    type: AppRef,
    authScopes: firstParty({ platformAdmin: true }),
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateAppInput, required: true }) },
    resolve: (_root, { id, input }, ctx) => updateApp(ctx, String(id), present(input)),
  }),
);

builder.mutationField('deleteApp', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    authScopes: firstParty({ platformAdmin: true }),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => deleteApp(ctx, String(id)),
  }),
);

builder.mutationField('rotateAppSecret', (t) =>
  t.field({
    errors: refusals,
    type: AppWithSecretRef,
    authScopes: firstParty({ platformAdmin: true }),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => rotateAppSecret(ctx, String(id)),
  }),
);

builder.mutationField('installApp', (t) =>
  t.field({
    errors: refusals,
    type: InstallationRef,
    description:
      "Installs the app (an organization's admins): makes its OAuth client and pushes the credentials to the app.",
    authScopes: firstParty(),
    args: {
      appId: t.arg.id({ required: true }),
      organizationId: t.arg.string({ description: "Defaults to the caller's current organization." }),
    },
    resolve: (_root, { appId, organizationId }, ctx) => installApp(ctx, String(appId), present({ organizationId })),
  }),
);

builder.mutationField('uninstallApp', (t) =>
  t.field({
    errors: refusals,
    type: InstallationRef,
    description:
      'Removes an installation: its client and every token of it end at once; the app is told through the worker.',
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => uninstallApp(ctx, String(id)),
  }),
);
