// Routes under /api/v1/oauth-clients: register, list, read, update (and disable), rotate the secret, delete; and the
// initial access tokens with which apps register themselves (RFC 7591).
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, page, route, type RestRoute } from './route.ts';
import { presentPage } from './presenters.ts';

const CLIENT_FIELDS = graphql(
  `fragment ClientFields on OAuthClient { id clientId organizationId name description redirectUris postLogoutRedirectUris allowedOrigins resources allowedScopes grantTypes idTokenSignedResponseAlg enabled consentRequired tokenEndpointAuthMethod createdAt updatedAt }`,
);
/** Registration and rotation only: the one time the client secret is shown. */
const WITH_SECRET_FIELDS = graphql(
  `fragment ClientWithSecretFields on OAuthClientWithSecret { clientSecret client { ...ClientFields } }`,
  [CLIENT_FIELDS],
);

export const presentClient = (c: ResultOf<typeof CLIENT_FIELDS>) => ({
  id: c.id,
  client_id: c.clientId,
  organization_id: c.organizationId,
  name: c.name,
  description: c.description,
  redirect_uris: c.redirectUris,
  post_logout_redirect_uris: c.postLogoutRedirectUris,
  allowed_origins: c.allowedOrigins,
  resources: c.resources,
  allowed_scopes: c.allowedScopes,
  grant_types: c.grantTypes,
  id_token_signed_response_alg: c.idTokenSignedResponseAlg,
  enabled: c.enabled,
  consent_required: c.consentRequired,
  token_endpoint_auth_method: c.tokenEndpointAuthMethod,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});

const WRITABLE = [
  'name',
  'description',
  'redirect_uris',
  'post_logout_redirect_uris',
  'allowed_origins',
  'resources',
  'allowed_scopes',
  'grant_types',
  'id_token_signed_response_alg',
  'enabled',
  'consent_required',
];

const REGISTRATION_TOKEN_FIELDS = graphql(
  `fragment RegistrationTokenFields on RegistrationToken { id organizationId name scopes public token lastUsedAt createdAt }`,
);
const presentRegistrationToken = (r: ResultOf<typeof REGISTRATION_TOKEN_FIELDS>) => ({
  id: r.id,
  organization_id: r.organizationId,
  name: r.name,
  scopes: r.scopes,
  public: r.public,
  // Only the answer that creates it carries the token.
  ...(r.token ? { token: r.token } : {}),
  last_used_at: r.lastUsedAt ?? null,
  created_at: r.createdAt,
});

const withSecret = (r: ResultOf<typeof WITH_SECRET_FIELDS>) => ({
  ...presentClient(r.client),
  client_secret: r.clientSecret,
});

export const oauthClientRoutes: RestRoute[] = [
  route({
    method: 'POST',
    path: '/oauth-clients',
    summary:
      'Register an OAuth client; client_secret is shown only in this response (a public client, token_endpoint_auth_method none, has none)',
    operation: graphql(
      `mutation($input: CreateOAuthClientInput!) { createOAuthClient(input: $input) { __typename ...ClientWithSecretFields ...UserErrorFields } }`,
      [WITH_SECRET_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({
      input: fromBody(body, [...WRITABLE, 'organization_id', 'token_endpoint_auth_method']),
    }),
    respond: (d) => ({ status: 201, body: withSecret(unwrap(d.createOAuthClient)) }),
  }),
  route({
    method: 'GET',
    path: '/oauth-clients',
    summary: "The organization's OAuth clients",
    operation: graphql(
      `query($org: String, $limit: Int, $cursor: String) { oauthClients(organizationId: $org, limit: $limit, cursor: $cursor) { items { ...ClientFields } nextCursor } }`,
      [CLIENT_FIELDS],
    ),
    variables: ({ query }) => ({ org: query.organization_id, ...page(query) }),
    respond: (d) => ({ body: presentPage('oauth_clients', d.oauthClients, presentClient) }),
  }),
  // Before /oauth-clients/:id, which would take `registration-tokens` for an id.
  route({
    method: 'POST',
    path: '/oauth-clients/registration-tokens',
    summary:
      'Make an initial access token, with which an app registers its own client (POST /oauth/register); the token is shown only in this response',
    operation: graphql(
      `mutation($input: CreateRegistrationTokenInput!) { createRegistrationToken(input: $input) { __typename ...RegistrationTokenFields ...UserErrorFields } }`,
      [REGISTRATION_TOKEN_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['organization_id', 'name', 'scopes', 'public']) }),
    respond: (d) => ({ status: 201, body: presentRegistrationToken(unwrap(d.createRegistrationToken)) }),
  }),
  route({
    method: 'GET',
    path: '/oauth-clients/registration-tokens',
    summary: "The organization's initial access tokens, newest first (without the tokens themselves)",
    operation: graphql(
      `query($org: String) { registrationTokens(organizationId: $org) { ...RegistrationTokenFields } }`,
      [REGISTRATION_TOKEN_FIELDS],
    ),
    variables: ({ query }) => ({ org: query.organization_id }),
    respond: (d) => ({ body: { registration_tokens: d.registrationTokens.map(presentRegistrationToken) } }),
  }),
  route({
    method: 'DELETE',
    path: '/oauth-clients/registration-tokens/:id',
    summary: 'Delete an initial access token; the clients registered with it stay',
    operation: graphql(`mutation($id: ID!) { deleteRegistrationToken(id: $id) { __typename ...UserErrorFields } }`, [
      USER_ERROR_FIELDS,
    ]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteRegistrationToken), { status: 204 }),
  }),
  route({
    method: 'GET',
    path: '/oauth-clients/:id',
    summary: 'One OAuth client (by id or client_id)',
    operation: graphql(`query($id: ID!) { oauthClient(id: $id) { ...ClientFields } }`, [CLIENT_FIELDS]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentClient(d.oauthClient) }),
  }),
  route({
    method: 'PATCH',
    path: '/oauth-clients/:id',
    summary: 'Update an OAuth client; {"enabled": false} disables it and ends its tokens',
    operation: graphql(
      `mutation($id: ID!, $input: UpdateOAuthClientInput!) { updateOAuthClient(id: $id, input: $input) { __typename ...ClientFields ...UserErrorFields } }`,
      [CLIENT_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, input: fromBody(body, WRITABLE) }),
    respond: (d) => ({ body: presentClient(unwrap(d.updateOAuthClient)) }),
  }),
  route({
    method: 'POST',
    path: '/oauth-clients/:id/rotate-secret',
    summary: 'Replace the client secret; the new one is shown only in this response',
    body: false,
    operation: graphql(
      `mutation($id: ID!) { rotateOAuthClientSecret(id: $id) { __typename ...ClientWithSecretFields ...UserErrorFields } }`,
      [WITH_SECRET_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: withSecret(unwrap(d.rotateOAuthClientSecret)) }),
  }),
  route({
    method: 'DELETE',
    path: '/oauth-clients/:id',
    summary: 'Delete an OAuth client and everything issued to it',
    operation: graphql(`mutation($id: ID!) { deleteOAuthClient(id: $id) { __typename ...UserErrorFields } }`, [
      USER_ERROR_FIELDS,
    ]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => (unwrap(d.deleteOAuthClient), { status: 204 }),
  }),
];
