// Routes under /api/v1 for an organization's sign-in connections, and the platform's (docs/architecture.md#single-sign-on).
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, route, type RestRoute } from './route.ts';

const CONNECTION_FIELDS = graphql(
  `fragment ConnectionFields on SsoConnection { id organizationId type name enabled domains defaultRole requireSso seatSubscriptionId roleClaim roleMap issuer clientId hasClientSecret scopes entryPoint idpEntityId idpCertificates callbackUrl acsUrl metadataUrl createdAt updatedAt }`,
);

const presentConnection = (c: ResultOf<typeof CONNECTION_FIELDS>) => ({
  id: c.id,
  organization_id: c.organizationId,
  type: c.type,
  name: c.name,
  enabled: c.enabled,
  domains: c.domains,
  default_role: c.defaultRole,
  require_sso: c.requireSso,
  seat_subscription_id: c.seatSubscriptionId,
  role_claim: c.roleClaim,
  role_map: c.roleMap,
  ...(c.type === 'saml'
    ? {
        entry_point: c.entryPoint,
        idp_entity_id: c.idpEntityId,
        idp_certificates: c.idpCertificates,
        acs_url: c.acsUrl,
        metadata_url: c.metadataUrl,
      }
    : {
        issuer: c.issuer,
        client_id: c.clientId,
        has_client_secret: c.hasClientSecret,
        scopes: c.scopes,
        callback_url: c.callbackUrl,
      }),
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});

const SETTINGS = [
  'name',
  'enabled',
  'domains',
  'default_role',
  'require_sso',
  'seat_subscription_id',
  'role_claim',
  'role_map',
  'issuer',
  'client_id',
  'client_secret',
  'scopes',
  'metadata_xml',
  'entry_point',
  'idp_cert',
  'idp_entity_id',
] as const;

export const connectionRoutes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/connections',
    summary: "The organization's sign-in connections (?platform=true: the platform-wide ones, for platform admins)",
    operation: graphql(
      `query($org: String, $platform: Boolean) { ssoConnections(organizationId: $org, platform: $platform) { ...ConnectionFields } }`,
      [CONNECTION_FIELDS],
    ),
    variables: ({ query }) => ({ org: query.organization_id, platform: query.platform === 'true' }),
    respond: (d) => ({ body: { connections: d.ssoConnections.map(presentConnection) } }),
  }),
  route({
    method: 'POST',
    path: '/connections',
    summary:
      'Add an OpenID Connect or SAML connection (or, with platform: true, a platform-wide OpenID Connect or GitHub sign-in)',
    operation: graphql(
      `mutation($input: CreateSsoConnectionInput!) { createSsoConnection(input: $input) { __typename ...ConnectionFields ...UserErrorFields } }`,
      [CONNECTION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['type', 'organization_id', 'platform', ...SETTINGS]) }),
    respond: (d) => ({ status: 201, body: presentConnection(unwrap(d.createSsoConnection)) }),
  }),
  route({
    method: 'GET',
    path: '/connections/:id',
    summary: 'One sign-in connection (its client secret is never shown)',
    operation: graphql(`query($id: String!) { ssoConnection(id: $id) { ...ConnectionFields } }`, [CONNECTION_FIELDS]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentConnection(d.ssoConnection) }),
  }),
  route({
    method: 'PATCH',
    path: '/connections/:id',
    summary: 'Change a connection; enabled: false stops its sign-ins at once',
    operation: graphql(
      `mutation($id: String!, $input: UpdateSsoConnectionInput!) { updateSsoConnection(id: $id, input: $input) { __typename ...ConnectionFields ...UserErrorFields } }`,
      [CONNECTION_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, input: fromBody(body, SETTINGS) }),
    respond: (d) => ({ body: presentConnection(unwrap(d.updateSsoConnection)) }),
  }),
  route({
    method: 'DELETE',
    path: '/connections/:id',
    summary: 'Remove a connection; the people who signed in through it keep their accounts',
    operation: graphql(`mutation($id: String!) { deleteSsoConnection(id: $id) }`),
    variables: ({ params }) => ({ id: params.id }),
    respond: () => ({ status: 204 }),
  }),
];
