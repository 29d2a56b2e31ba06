// Routes under /api/v1 for an organization's sign-in connections, and the platform's (docs/architecture.md#single-sign-on).
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { fromBody, type RestRoute } from './route.ts';

const CONNECTION_FIELDS =
  'id organizationId type name enabled domains defaultRole requireSso seatSubscriptionId roleClaim roleMap issuer clientId hasClientSecret scopes entryPoint idpEntityId idpCertificates callbackUrl acsUrl metadataUrl createdAt updatedAt';

const presentConnection = (c: any) => ({
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

const ONE = `query($id: String!) { ssoConnection(id: $id) { ${CONNECTION_FIELDS} } }`;

export const connectionRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/connections',
    summary: "The organization's sign-in connections (?platform=true: the platform-wide ones, for platform admins)",
    operation: `query($org: String, $platform: Boolean) { ssoConnections(organizationId: $org, platform: $platform) { ${CONNECTION_FIELDS} } }`,
    variables: ({ query }) => ({ org: query.organization_id, platform: query.platform === 'true' }),
    respond: (d) => ({ body: { connections: d.ssoConnections.map(presentConnection) } }),
  },
  {
    method: 'POST',
    path: '/connections',
    summary:
      'Add an OpenID Connect or SAML connection (or, with platform: true, a platform-wide OpenID Connect or GitHub sign-in)',
    operation: `mutation($input: CreateSsoConnectionInput!) { createSsoConnection(input: $input) { __typename ... on SsoConnection { ${CONNECTION_FIELDS} } ${USER_ERROR_FIELDS} } }`,
    variables: ({ body }) => ({ input: fromBody(body, ['type', 'organization_id', 'platform', ...SETTINGS]) }),
    respond: (d) => ({ status: 201, body: presentConnection(unwrap(d.createSsoConnection)) }),
  },
  {
    method: 'GET',
    path: '/connections/:id',
    summary: 'One sign-in connection (its client secret is never shown)',
    operation: ONE,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentConnection(d.ssoConnection) }),
  },
  {
    method: 'PATCH',
    path: '/connections/:id',
    summary: 'Change a connection; enabled: false stops its sign-ins at once',
    operation: `mutation($id: String!, $input: UpdateSsoConnectionInput!) { updateSsoConnection(id: $id, input: $input) { __typename ... on SsoConnection { ${CONNECTION_FIELDS} } ${USER_ERROR_FIELDS} } }`,
    variables: ({ params, body }) => ({ id: params.id, input: fromBody(body, SETTINGS) }),
    respond: (d) => ({ body: presentConnection(unwrap(d.updateSsoConnection)) }),
  },
  {
    method: 'DELETE',
    path: '/connections/:id',
    summary: 'Remove a connection; the people who signed in through it keep their accounts',
    operation: 'mutation($id: String!) { deleteSsoConnection(id: $id) }',
    variables: ({ params }) => ({ id: params.id }),
    respond: () => ({ status: 204 }),
  },
];
