// Routes under /api/v1/apps and /api/v1/installations: the marketplace catalog, installs and uninstalls
// (docs/architecture.md#marketplace).
import { ValidationError } from '../../schema/errors/index.ts';
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { onlyFields, page, pick, route, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const APP_FIELDS = graphql(
  `fragment AppFields on App { id name description webhookUrl redirectUris scopes homepageUrl createdAt updatedAt }`,
);
const INSTALLATION_FIELDS = graphql(
  `fragment InstallationFields on Installation { id appId organizationId clientId launchUrl installedAt app { name } }`,
);
/** Creation and rotation only: the one time the signing secret is shown. */
const WITH_SECRET_FIELDS = graphql(
  `fragment WithSecretFields on AppWithSecret { signingSecret app { ...AppFields } }`,
  [APP_FIELDS],
);

const presentApp = (a: ResultOf<typeof APP_FIELDS>) => ({
  id: a.id,
  name: a.name,
  description: a.description,
  webhook_url: a.webhookUrl,
  redirect_uris: a.redirectUris,
  scopes: a.scopes,
  homepage_url: a.homepageUrl ?? null,
  created_at: a.createdAt,
  updated_at: a.updatedAt,
});
const withSecret = (r: ResultOf<typeof WITH_SECRET_FIELDS>) => ({
  ...presentApp(r.app),
  signing_secret: r.signingSecret,
});

const presentInstallation = (i: ResultOf<typeof INSTALLATION_FIELDS>) => ({
  id: i.id,
  app_id: i.appId,
  app_name: i.app.name,
  organization_id: i.organizationId,
  client_id: i.clientId,
  launch_url: i.launchUrl,
  installed_at: i.installedAt,
});

const WRITABLE = ['name', 'description', 'webhook_url', 'redirect_uris', 'scopes', 'homepage_url'];

/** GraphQL would read a lone string as a one-item list; the REST body must send lists. */
function appInput(body: Record<string, unknown>) {
  const input = onlyFields(body, WRITABLE);
  const problems = ['redirect_uris', 'scopes']
    .filter((k) => k in input && !Array.isArray(input[k]))
    .map((k) => ({ path: k, message: 'must be a list of strings' }));
  if (problems.length) throw new ValidationError('The request is invalid', problems);
  return pick(input, WRITABLE);
}

export const appRoutes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/apps',
    summary: 'The marketplace catalog (never with signing secrets)',
    operation: graphql(
      `query($limit: Int, $cursor: String) { apps(limit: $limit, cursor: $cursor) { items { ...AppFields } nextCursor } }`,
      [APP_FIELDS],
    ),
    variables: ({ query }) => page(query),
    respond: (d) => ({ body: presentPage('apps', d.apps, presentApp) }),
  }),
  route({
    method: 'POST',
    path: '/apps',
    summary: 'Register an app (platform admins); signing_secret is shown only here and on rotation',
    operation: graphql(
      `mutation($input: CreateAppInput!) { createApp(input: $input) { __typename ...WithSecretFields ...UserErrorFields } }`,
      [WITH_SECRET_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: appInput(body) }),
    respond: (d) => ({ status: 201, body: withSecret(unwrap(d.createApp)) }),
  }),
  route({
    method: 'GET',
    path: '/apps/:id',
    summary: 'One app of the catalog',
    operation: graphql(`query($id: ID!) { app(id: $id) { ...AppFields } }`, [APP_FIELDS]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentApp(d.app) }),
  }),
  route({
    method: 'PATCH',
    path: '/apps/:id',
    summary: 'Change an app (platform admins); new redirect URIs or scopes apply to every installed client at once',
    operation: graphql(
      `mutation($id: ID!, $input: UpdateAppInput!) { updateApp(id: $id, input: $input) { __typename ...AppFields ...UserErrorFields } }`,
      [APP_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, input: appInput(body) }),
    respond: (d) => ({ body: presentApp(unwrap(d.updateApp)) }),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:id',
    summary: 'Delete an app (platform admins); refused with 409 while it is installed anywhere',
    operation: graphql(`mutation($id: ID!) { deleteApp(id: $id) { __typename ...UserErrorFields } }`, [
      USER_ERROR_FIELDS,
    ]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteApp), { status: 204 }),
  }),
  route({
    method: 'POST',
    path: '/apps/:id/rotate-secret',
    summary: 'Replace the signing secret (platform admins); the old one stops at once',
    body: false,
    operation: graphql(
      `mutation($id: ID!) { rotateAppSecret(id: $id) { __typename ...WithSecretFields ...UserErrorFields } }`,
      [WITH_SECRET_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: withSecret(unwrap(d.rotateAppSecret)) }),
  }),
  route({
    method: 'POST',
    path: '/apps/:id/install',
    summary:
      'Install an app in the organization (its admins): creates its OAuth client and pushes the credentials to the app; 502 app_unreachable leaves nothing',
    operation: graphql(
      `mutation($id: ID!, $org: String) { installApp(appId: $id, organizationId: $org) { __typename ...InstallationFields ...UserErrorFields } }`,
      [INSTALLATION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, org: onlyFields(body, ['organization_id']).organization_id }),
    respond: (d) => ({ status: 201, body: presentInstallation(unwrap(d.installApp)) }),
  }),
  route({
    method: 'GET',
    path: '/installations',
    summary: "The organization's installed apps (every member), each with its launch URL",
    operation: graphql(
      `query($org: String, $limit: Int, $cursor: String) { installations(organizationId: $org, limit: $limit, cursor: $cursor) { items { ...InstallationFields } nextCursor } }`,
      [INSTALLATION_FIELDS],
    ),
    variables: ({ query }) => ({ org: query.organization_id, ...page(query) }),
    respond: (d) => ({ body: presentPage('installations', d.installations, presentInstallation) }),
  }),
  route({
    method: 'GET',
    path: '/installations/:id',
    summary: 'One installation (every member of its organization)',
    operation: graphql(`query($id: ID!) { installation(id: $id) { ...InstallationFields } }`, [INSTALLATION_FIELDS]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentInstallation(d.installation) }),
  }),
  route({
    method: 'DELETE',
    path: '/installations/:id',
    summary: 'Uninstall (admins): the client and its tokens end at once; app.uninstalled is sent through the queue',
    operation: graphql(
      `mutation($id: ID!) { uninstallApp(id: $id) { __typename ... on Installation { id } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.uninstallApp), { status: 204 }),
  }),
];
