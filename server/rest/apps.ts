// Routes under /api/v1/apps and /api/v1/installations: the marketplace catalog, installs and uninstalls
// (docs/architecture.md#marketplace).
import { ValidationError } from '../../schema/errors/index.ts';
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { onlyFields, page, pick, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const APP_FIELDS = 'id name description webhookUrl redirectUris scopes homepageUrl createdAt updatedAt';
const INSTALLATION_FIELDS = 'id appId organizationId clientId launchUrl installedAt app { name }';

const presentApp = (a: any) => ({
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
const withSecret = (r: any) => ({ ...presentApp(r.app), signing_secret: r.signingSecret });

const presentInstallation = (i: any) => ({
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

const MUTATION = (name: string, args: string, params: string, fields: string) =>
  `mutation(${args}) { ${name}(${params}) { __typename ... on ${fields} ${USER_ERROR_FIELDS} } }`;
const WITH_SECRET = `AppWithSecret { signingSecret app { ${APP_FIELDS} } }`;

export const appRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/apps',
    summary: 'The marketplace catalog (never with signing secrets)',
    operation: `query($limit: Int, $cursor: String) { apps(limit: $limit, cursor: $cursor) { items { ${APP_FIELDS} } nextCursor } }`,
    variables: ({ query }) => page(query),
    respond: (d) => ({ body: presentPage('apps', d.apps, presentApp) }),
  },
  {
    method: 'POST',
    path: '/apps',
    summary: 'Register an app (platform admins); signing_secret is shown only here and on rotation',
    operation: MUTATION('createApp', '$input: CreateAppInput!', 'input: $input', WITH_SECRET),
    variables: ({ body }) => ({ input: appInput(body) }),
    respond: (d) => ({ status: 201, body: withSecret(unwrap(d.createApp)) }),
  },
  {
    method: 'GET',
    path: '/apps/:id',
    summary: 'One app of the catalog',
    operation: `query($id: ID!) { app(id: $id) { ${APP_FIELDS} } }`,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentApp(d.app) }),
  },
  {
    method: 'PATCH',
    path: '/apps/:id',
    summary: 'Change an app (platform admins); new redirect URIs or scopes apply to every installed client at once',
    operation: MUTATION(
      'updateApp',
      '$id: ID!, $input: UpdateAppInput!',
      'id: $id, input: $input',
      `App { ${APP_FIELDS} }`,
    ),
    variables: ({ params, body }) => ({ id: params.id, input: appInput(body) }),
    respond: (d) => ({ body: presentApp(unwrap(d.updateApp)) }),
  },
  {
    method: 'DELETE',
    path: '/apps/:id',
    summary: 'Delete an app (platform admins); refused with 409 while it is installed anywhere',
    operation: `mutation($id: ID!) { deleteApp(id: $id) { __typename ${USER_ERROR_FIELDS} } }`,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteApp), { status: 204 }),
  },
  {
    method: 'POST',
    path: '/apps/:id/rotate-secret',
    summary: 'Replace the signing secret (platform admins); the old one stops at once',
    body: false,
    operation: MUTATION('rotateAppSecret', '$id: ID!', 'id: $id', WITH_SECRET),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: withSecret(unwrap(d.rotateAppSecret)) }),
  },
  {
    method: 'POST',
    path: '/apps/:id/install',
    summary:
      'Install an app in the organization (its admins): creates its OAuth client and pushes the credentials to the app; 502 app_unreachable leaves nothing',
    operation: MUTATION(
      'installApp',
      '$id: ID!, $org: String',
      'appId: $id, organizationId: $org',
      `Installation { ${INSTALLATION_FIELDS} }`,
    ),
    variables: ({ params, body }) => ({ id: params.id, org: onlyFields(body, ['organization_id']).organization_id }),
    respond: (d) => ({ status: 201, body: presentInstallation(unwrap(d.installApp)) }),
  },
  {
    method: 'GET',
    path: '/installations',
    summary: "The organization's installed apps (every member), each with its launch URL",
    operation: `query($org: String, $limit: Int, $cursor: String) { installations(organizationId: $org, limit: $limit, cursor: $cursor) { items { ${INSTALLATION_FIELDS} } nextCursor } }`,
    variables: ({ query }) => ({ org: query.organization_id, ...page(query) }),
    respond: (d) => ({ body: presentPage('installations', d.installations, presentInstallation) }),
  },
  {
    method: 'GET',
    path: '/installations/:id',
    summary: 'One installation (every member of its organization)',
    operation: `query($id: ID!) { installation(id: $id) { ${INSTALLATION_FIELDS} } }`,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentInstallation(d.installation) }),
  },
  {
    method: 'DELETE',
    path: '/installations/:id',
    summary: 'Uninstall (admins): the client and its tokens end at once; app.uninstalled is sent through the queue',
    operation: MUTATION('uninstallApp', '$id: ID!', 'id: $id', 'Installation { id }'),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.uninstallApp), { status: 204 }),
  },
];
