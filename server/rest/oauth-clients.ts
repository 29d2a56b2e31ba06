// Routes under /api/v1/oauth-clients: register, list, read, update (and disable), rotate the secret, delete.
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { fromBody, page, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const CLIENT_FIELDS =
  'id clientId organizationId name description redirectUris postLogoutRedirectUris allowedOrigins allowedScopes grantTypes idTokenSignedResponseAlg enabled consentRequired createdAt updatedAt';

export const presentClient = (c: any) => ({
  id: c.id,
  client_id: c.clientId,
  organization_id: c.organizationId,
  name: c.name,
  description: c.description,
  redirect_uris: c.redirectUris,
  post_logout_redirect_uris: c.postLogoutRedirectUris,
  allowed_origins: c.allowedOrigins,
  allowed_scopes: c.allowedScopes,
  grant_types: c.grantTypes,
  id_token_signed_response_alg: c.idTokenSignedResponseAlg,
  enabled: c.enabled,
  consent_required: c.consentRequired,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});

const WRITABLE = [
  'name',
  'description',
  'redirect_uris',
  'post_logout_redirect_uris',
  'allowed_origins',
  'allowed_scopes',
  'grant_types',
  'id_token_signed_response_alg',
  'enabled',
  'consent_required',
];

const withSecret = (r: any) => ({ ...presentClient(r.client), client_secret: r.clientSecret });

export const oauthClientRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/oauth-clients',
    summary: 'Register an OAuth client; client_secret is shown only in this response',
    operation: `mutation($input: CreateOAuthClientInput!) { createOAuthClient(input: $input) { __typename ... on OAuthClientWithSecret { clientSecret client { ${CLIENT_FIELDS} } } ${USER_ERROR_FIELDS} } }`,
    variables: ({ body }) => ({ input: fromBody(body, [...WRITABLE, 'organization_id']) }),
    respond: (d) => ({ status: 201, body: withSecret(unwrap(d.createOAuthClient)) }),
  },
  {
    method: 'GET',
    path: '/oauth-clients',
    summary: "The organization's OAuth clients",
    operation: `query($org: String, $limit: Int, $cursor: String) { oauthClients(organizationId: $org, limit: $limit, cursor: $cursor) { items { ${CLIENT_FIELDS} } nextCursor } }`,
    variables: ({ query }) => ({ org: query.organization_id, ...page(query) }),
    respond: (d) => ({ body: presentPage('oauth_clients', d.oauthClients, presentClient) }),
  },
  {
    method: 'GET',
    path: '/oauth-clients/:id',
    summary: 'One OAuth client (by id or client_id)',
    operation: `query($id: ID!) { oauthClient(id: $id) { ${CLIENT_FIELDS} } }`,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentClient(d.oauthClient) }),
  },
  {
    method: 'PATCH',
    path: '/oauth-clients/:id',
    summary: 'Update an OAuth client; {"enabled": false} disables it and ends its tokens',
    operation: `mutation($id: ID!, $input: UpdateOAuthClientInput!) { updateOAuthClient(id: $id, input: $input) { __typename ... on OAuthClient { ${CLIENT_FIELDS} } ${USER_ERROR_FIELDS} } }`,
    variables: ({ params, body }) => ({ id: params.id, input: fromBody(body, WRITABLE) }),
    respond: (d) => ({ body: presentClient(unwrap(d.updateOAuthClient)) }),
  },
  {
    method: 'POST',
    path: '/oauth-clients/:id/rotate-secret',
    summary: 'Replace the client secret; the new one is shown only in this response',
    body: false,
    operation: `mutation($id: ID!) { rotateOAuthClientSecret(id: $id) { __typename ... on OAuthClientWithSecret { clientSecret client { ${CLIENT_FIELDS} } } ${USER_ERROR_FIELDS} } }`,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: withSecret(unwrap(d.rotateOAuthClientSecret)) }),
  },
  {
    method: 'DELETE',
    path: '/oauth-clients/:id',
    summary: 'Delete an OAuth client and everything issued to it',
    operation: `mutation($id: ID!) { deleteOAuthClient(id: $id) { __typename ${USER_ERROR_FIELDS} } }`,
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteOAuthClient), { status: 204 }),
  },
];
