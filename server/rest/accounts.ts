// Routes under /api/v1 for the account flows that mailed links drive (password reset, address verification) and
// for the mail log that platform admins read.
import { USER_ERROR_FIELDS, unwrap } from '../graphql/executor.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { fromBody, page, route, type RestRoute } from './route.ts';
import { ME_FIELDS, presentMe, presentPage } from './presenters.ts';

const MAIL_FIELDS = graphql(
  `fragment MailFields on Mail { id kind to subject text html status attempts lastError sentAt createdAt }`,
);
const presentMail = (m: ResultOf<typeof MAIL_FIELDS>) => ({
  id: m.id,
  kind: m.kind,
  to: m.to,
  subject: m.subject,
  text: m.text,
  html: m.html,
  status: m.status,
  attempts: m.attempts,
  last_error: m.lastError,
  sent_at: m.sentAt,
  created_at: m.createdAt,
});

/** What a reset request answers, whether or not an account uses the address. */
const RESET_REQUESTED = {
  message: 'If an account uses this address, a link to reset its password is on its way. It works once, for one hour.',
};

export const accountRoutes: RestRoute[] = [
  route({
    method: 'POST',
    path: '/auth/password-reset',
    public: true,
    summary: 'Mail a password reset link (the same answer for every address)',
    operation: graphql(
      `mutation($input: RequestPasswordResetInput!) { requestPasswordReset(input: $input) { __typename ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['email']) }),
    respond: (d) => (unwrap(d.requestPasswordReset), { status: 202, body: RESET_REQUESTED }),
  }),
  route({
    method: 'POST',
    path: '/auth/password-reset/confirm',
    public: true,
    summary: 'Set a new password with a reset link token; every session and token ends',
    operation: graphql(
      `mutation($input: ConfirmPasswordResetInput!) { confirmPasswordReset(input: $input) { __typename ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['token', 'password']) }),
    respond: (d) => (unwrap(d.confirmPasswordReset), { status: 204 }),
  }),
  route({
    method: 'POST',
    path: '/auth/verify-email',
    public: true,
    summary: 'Prove an address with a verification link token',
    operation: graphql(
      `mutation($input: VerifyEmailInput!) { verifyEmail(input: $input) { __typename ...MeFields ...UserErrorFields } }`,
      [ME_FIELDS, USER_ERROR_FIELDS],
    ),
    variables: ({ body }) => ({ input: fromBody(body, ['token']) }),
    respond: (d) => ({ body: presentMe(unwrap(d.verifyEmail)) }),
  }),
  route({
    method: 'POST',
    path: '/users/me/email/verify-request',
    summary: 'Mail a new verification link (for a pending new address, else the current one)',
    body: false,
    operation: graphql(
      `mutation { requestEmailVerification { __typename ... on VerificationSent { email } ...UserErrorFields } }`,
      [USER_ERROR_FIELDS],
    ),
    respond: (d) => ({ status: 202, body: { email: unwrap(d.requestEmailVerification).email } }),
  }),
  route({
    method: 'GET',
    path: '/mails',
    summary: 'Outgoing mail and the development mailbox, newest first (platform admins)',
    operation: graphql(
      `query($to: String, $limit: Int, $cursor: String) { mails(to: $to, limit: $limit, cursor: $cursor) { items { ...MailFields } nextCursor } }`,
      [MAIL_FIELDS],
    ),
    variables: ({ query }) => ({ to: query.to, ...page(query) }),
    respond: (d) => ({ body: presentPage('mails', d.mails, presentMail) }),
  }),
  route({
    method: 'GET',
    path: '/mails/:id',
    summary: 'One mail (platform admins)',
    operation: graphql(`query($id: ID!) { mail(id: $id) { ...MailFields } }`, [MAIL_FIELDS]),
    variables: ({ params }) => ({ id: params.id }),
    respond: (d) => ({ body: presentMail(d.mail) }),
  }),
];
