// Routes under /api/v1 for a person's second factors and the second step of a sign-in with one
// (docs/architecture.md#second-factors).
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, route, type RestRoute } from './route.ts';
import { LOGIN_FIELDS, loginSession, presentLogin } from './presenters.ts';

export const MFA_CHALLENGE_FIELDS = graphql(
  `fragment MfaChallengeFields on MfaChallenge { mfaToken expiresAt methods }`,
);
export const presentMfaChallenge = (c: ResultOf<typeof MFA_CHALLENGE_FIELDS>) => ({
  mfa_required: true,
  mfa_token: c.mfaToken,
  expires_at: c.expiresAt,
  methods: c.methods,
});

const MFA_STATUS_FIELDS = graphql(
  `fragment MfaStatusFields on MfaStatus { totp totpPending passkeys recoveryCodesLeft }`,
);
const presentStatus = (s: ResultOf<typeof MFA_STATUS_FIELDS>) => ({
  totp: s.totp,
  totp_pending: s.totpPending,
  passkeys: s.passkeys,
  recovery_codes_left: s.recoveryCodesLeft,
});

/** A fresh password or code, where a change weakens the account. */
const PROOF = ['password', 'code'] as const;

export const mfaRoutes: RestRoute[] = [
  route({
    method: 'POST',
    path: '/auth/login/mfa',
    public: true,
    summary: 'Complete a sign-in with a code of the authenticator app or a recovery code',
    operation: graphql(
      `mutation($input: MfaLoginInput!) { completeMfaLogin(input: $input) { __typename ...LoginFields ...UserErrorFields } }`,
      [LOGIN_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['mfa_token', 'code', 'recovery_code']) }),
    respond: (d) => {
      const login = unwrap(d.completeMfaLogin);
      return { body: presentLogin(login), session: loginSession(login) };
    },
  }),
  route({
    method: 'GET',
    path: '/users/me/mfa',
    summary: 'Your second factors',
    operation: graphql(`query { myMfa { ...MfaStatusFields } }`, [MFA_STATUS_FIELDS]),
    respond: (d) => ({ body: presentStatus(d.myMfa) }),
  }),
  route({
    method: 'POST',
    path: '/users/me/mfa/totp',
    summary: 'Start setting up an authenticator app (pending until confirmed; as the first factor, with your password)',
    operation: graphql(
      `mutation($input: FreshProofInput) { enrollTotp(input: $input) { __typename ... on TotpEnrolment { secret otpauthUrl qrSvg } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, PROOF) }),
    respond: (d) => {
      const e = unwrap(d.enrollTotp);
      return { status: 201, body: { secret: e.secret, otpauth_url: e.otpauthUrl, qr_svg: e.qrSvg } };
    },
  }),
  route({
    method: 'POST',
    path: '/users/me/mfa/totp/confirm',
    summary: 'Confirm the authenticator app with a code; answers ten recovery codes, shown once',
    operation: graphql(
      `mutation($input: TotpCodeInput!) { confirmTotp(input: $input) { __typename ... on RecoveryCodes { codes } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['code']) }),
    respond: (d) => ({ body: { recovery_codes: unwrap(d.confirmTotp).codes } }),
  }),
  route({
    method: 'DELETE',
    path: '/users/me/mfa/totp',
    summary: 'Remove the authenticator app (with your password or a code)',
    body: true,
    operation: graphql(
      `mutation($input: FreshProofInput!) { removeTotp(input: $input) { __typename ...MfaStatusFields ...UserErrorFields } }`,
      [MFA_STATUS_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, PROOF) }),
    respond: (d) => ({ body: presentStatus(unwrap(d.removeTotp)) }),
  }),
  route({
    method: 'POST',
    path: '/users/me/mfa/recovery-codes',
    summary: 'A new set of recovery codes (with your password or a code); the old ones stop working',
    operation: graphql(
      `mutation($input: FreshProofInput!) { regenerateRecoveryCodes(input: $input) { __typename ... on RecoveryCodes { codes } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, PROOF) }),
    respond: (d) => ({ body: { recovery_codes: unwrap(d.regenerateRecoveryCodes).codes } }),
  }),
];
