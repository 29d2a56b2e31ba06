// Routes under /api/v1 for an organization's directory provisioning: SCIM tokens and group mappings
// (docs/architecture.md#directory-provisioning). The SCIM endpoints themselves are server/scim's.
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, route, type RestRoute } from './route.ts';

const TOKEN_FIELDS = graphql(
  `fragment TokenFields on ScimToken { id organizationId name createdAt lastUsedAt revokedAt }`,
);
const presentToken = (t: ResultOf<typeof TOKEN_FIELDS>) => ({
  id: t.id,
  organization_id: t.organizationId,
  name: t.name,
  created_at: t.createdAt,
  last_used_at: t.lastUsedAt,
  revoked_at: t.revokedAt,
});

const MAPPING_FIELDS = graphql(
  `fragment MappingFields on DirectoryGroupMapping { id organizationId group role subscriptionId createdAt }`,
);
const presentMapping = (m: ResultOf<typeof MAPPING_FIELDS>) => ({
  id: m.id,
  organization_id: m.organizationId,
  group: m.group,
  role: m.role,
  subscription_id: m.subscriptionId,
  created_at: m.createdAt,
});

export const directoryRoutes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/scim-tokens',
    summary: "The organization's directory (SCIM) tokens; the token itself is never shown again",
    operation: graphql(`query($org: String) { scimTokens(organizationId: $org) { ...TokenFields } }`, [TOKEN_FIELDS]),
    variables: ({ query }) => ({ org: query.organization_id }),
    respond: (d) => ({ body: { scim_tokens: d.scimTokens.map(presentToken) } }),
  }),
  route({
    method: 'POST',
    path: '/scim-tokens',
    summary: 'Create a directory (SCIM) token; token is shown only in this response',
    operation: graphql(
      `mutation($name: String!, $org: String) { createScimToken(name: $name, organizationId: $org) { __typename ... on CreatedScimToken { token scimToken { ...TokenFields } } ...UserErrorFields } }`,
      [TOKEN_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => {
      const { name, organizationId } = fromBody(body, ['name', 'organization_id']);
      return { name, org: organizationId };
    },
    respond: (d) => {
      const created = unwrap(d.createScimToken);
      return { status: 201, body: { ...presentToken(created.scimToken), token: created.token } };
    },
  }),
  route({
    method: 'DELETE',
    path: '/scim-tokens/:id',
    summary: 'Revoke a directory (SCIM) token: its requests stop at once',
    operation: graphql(`mutation($id: String!) { revokeScimToken(id: $id) { id } }`),
    variables: ({ params }) => ({ id: params.id }),
    respond: () => ({ status: 204 }),
  }),
  route({
    method: 'GET',
    path: '/directory/group-mappings',
    summary: "Which directory groups give a role or a subscription's seats",
    operation: graphql(`query($org: String) { directoryGroupMappings(organizationId: $org) { ...MappingFields } }`, [
      MAPPING_FIELDS,
    ]),
    variables: ({ query }) => ({ org: query.organization_id }),
    respond: (d) => ({ body: { group_mappings: d.directoryGroupMappings.map(presentMapping) } }),
  }),
  route({
    method: 'POST',
    path: '/directory/group-mappings',
    summary: "Map a directory group (by display name) to a role or to a subscription's seats",
    operation: graphql(
      `mutation($input: CreateDirectoryGroupMappingInput!) { createDirectoryGroupMapping(input: $input) { __typename ...MappingFields ...UserErrorFields } }`,
      [MAPPING_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['group', 'role', 'subscription_id', 'organization_id']) }),
    respond: (d) => ({ status: 201, body: presentMapping(unwrap(d.createDirectoryGroupMapping)) }),
  }),
  route({
    method: 'DELETE',
    path: '/directory/group-mappings/:id',
    summary: 'Remove a group mapping; what it gave stays',
    operation: graphql(`mutation($id: String!) { deleteDirectoryGroupMapping(id: $id) }`),
    variables: ({ params }) => ({ id: params.id }),
    respond: () => ({ status: 204 }),
  }),
];
