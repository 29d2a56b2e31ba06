// Routes under /api/v1 for passkeys (docs/architecture.md#second-factors): the person's own (a session only) and the
// sign-in with one. Options are WebAuthn's JSON as the browser takes it (PublicKeyCredentialCreationOptionsJSON,
// PublicKeyCredentialRequestOptionsJSON), and a `response` is the browser's answer as JSON, both in WebAuthn's names.
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, route, type RestRoute } from './route.ts';
import { LOGIN_FIELDS, loginSession, presentLogin } from './presenters.ts';

const PASSKEY_FIELDS = graphql(
  `fragment PasskeyFields on Passkey { id name createdAt lastUsedAt deviceType backedUp transports }`,
);
const presentPasskey = (p: ResultOf<typeof PASSKEY_FIELDS>) => ({
  id: p.id,
  name: p.name,
  created_at: p.createdAt,
  last_used_at: p.lastUsedAt,
  device_type: p.deviceType,
  backed_up: p.backedUp,
  transports: p.transports,
});

export const passkeyRoutes: RestRoute[] = [
  route({
    method: 'POST',
    path: '/users/me/passkeys/options',
    summary:
      'WebAuthn creation options for a new passkey (they work once, for 5 minutes; as the first factor, with your password)',
    operation: graphql(`mutation($input: FreshProofInput) { passkeyRegistrationOptions(input: $input) }`),
    variables: ({ body }) => ({ input: fromBody(body, ['password', 'code']) }),
    respond: (d) => ({ body: d.passkeyRegistrationOptions }),
  }),
  route({
    method: 'POST',
    path: '/users/me/passkeys',
    summary: "Register a passkey from the browser's answer to the options",
    operation: graphql(
      `mutation($input: RegisterPasskeyInput!) { registerPasskey(input: $input) { __typename ...PasskeyFields ...UserErrorFields } }`,
      [PASSKEY_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['name', 'response']) }),
    respond: (d) => ({ status: 201, body: presentPasskey(unwrap(d.registerPasskey)) }),
  }),
  route({
    method: 'GET',
    path: '/users/me/passkeys',
    summary: "The caller's passkeys, oldest first",
    operation: graphql(`query { myPasskeys { ...PasskeyFields } }`, [PASSKEY_FIELDS]),
    respond: (d) => ({ body: { passkeys: d.myPasskeys.map(presentPasskey) } }),
  }),
  route({
    method: 'PATCH',
    path: '/users/me/passkeys/:id',
    summary: 'Rename a passkey',
    operation: graphql(
      `mutation($id: ID!, $name: String!) { renamePasskey(id: $id, name: $name) { __typename ...PasskeyFields ...UserErrorFields } }`,
      [PASSKEY_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, ...fromBody(body, ['name']) }),
    respond: (d) => ({ body: presentPasskey(unwrap(d.renamePasskey)) }),
  }),
  route({
    method: 'DELETE',
    path: '/users/me/passkeys/:id',
    summary: "Remove a passkey; needs the account's password",
    body: true,
    operation: graphql(
      `mutation($id: ID!, $password: String!) { removePasskey(id: $id, password: $password) { __typename ... on RemovedPasskey { id } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ params, body }) => ({ id: params.id, ...fromBody(body, ['password']) }),
    respond: (d) => (unwrap(d.removePasskey), { status: 204 }),
  }),
  route({
    method: 'POST',
    path: '/auth/passkeys/options',
    public: true,
    summary: 'WebAuthn request options for signing in with a passkey (they work once, for 5 minutes)',
    body: false,
    operation: graphql(`mutation { passkeySignInOptions }`),
    respond: (d) => ({ body: d.passkeySignInOptions }),
  }),
  route({
    method: 'POST',
    path: '/auth/passkeys/verify',
    public: true,
    summary: "Sign in with the browser's answer to the passkey options, without a password",
    operation: graphql(
      `mutation($input: PasskeySignInInput!) { passkeySignIn(input: $input) { __typename ...LoginFields ...UserErrorFields } }`,
      [LOGIN_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['response', 'mfa_token']) }),
    respond: (d) => {
      const login = unwrap(d.passkeySignIn);
      return { body: presentLogin(login), session: loginSession(login) };
    },
  }),
];
