// A person's second factors: the authenticator app, recovery codes, the sign-in's second step, an owner's reset.
import { builder } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { LoginPayloadRef } from '../auth/auth.graphql.ts';
import { completeMfaLogin } from './mfa-login.service.ts';
import {
  confirmTotp,
  enrollTotp,
  myMfa,
  regenerateRecoveryCodes,
  removeTotp,
  resetMemberMfa,
  type MfaStatus,
  type TotpEnrolment,
} from './mfa.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { MFA_ERROR_CODES } from './mfa.errors.ts';

const refusals = mutationErrors('MfaErrorCode', MFA_ERROR_CODES);

const MfaStatusRef = builder.objectRef<MfaStatus>('MfaStatus').implement({
  description: "The caller's second factors.",
  fields: (t) => ({
    totp: t.exposeBoolean('totp', { description: 'An authenticator app is set up.' }),
    totpPending: t.exposeBoolean('totpPending', {
      description: 'An authenticator app is being set up: a code confirms it.',
    }),
    passkeys: t.exposeInt('passkeys'),
    recoveryCodesLeft: t.exposeInt('recoveryCodesLeft'),
  }),
});

const TotpEnrolmentRef = builder.objectRef<TotpEnrolment>('TotpEnrolment').implement({
  description: 'What an authenticator app needs: the secret as text, as an otpauth:// URL and as a QR code (SVG).',
  fields: (t) => ({
    secret: t.exposeString('secret'),
    otpauthUrl: t.exposeString('otpauthUrl'),
    qrSvg: t.exposeString('qrSvg'),
  }),
});

const RecoveryCodesRef = builder.objectRef<{ codes: string[] }>('RecoveryCodes').implement({
  description: 'Ten single-use recovery codes, shown this once.',
  fields: (t) => ({ codes: t.exposeStringList('codes') }),
});

const CodeInput = builder.inputType('TotpCodeInput', { fields: (t) => ({ code: t.string({ required: true }) }) });

export const FreshProofInput = builder.inputType('FreshProofInput', {
  description:
    "The password, or a code of the authenticator app, given again for a change at the account's level (removing a factor, a first factor, deleting the account). An account that signs in through its identity provider may leave both out within five minutes of a sign-in.",
  fields: (t) => ({ password: t.string(), code: t.string() }),
});

const MfaLoginInput = builder.inputType('MfaLoginInput', {
  fields: (t) => ({
    mfaToken: t.string({ required: true, description: 'From the login that answered an MfaChallenge.' }),
    code: t.string({ description: 'A code of the authenticator app.' }),
    recoveryCode: t.string({ description: 'Or one of the recovery codes.' }),
  }),
});

builder.queryField('myMfa', (t) =>
  t.field({
    type: MfaStatusRef,
    description: "The caller's second factors. Needs a session.",
    authScopes: { session: true },
    resolve: (_r, _a, ctx) => myMfa(ctx),
  }),
);

builder.mutationField('enrollTotp', (t) =>
  t.field({
    errors: refusals,
    type: TotpEnrolmentRef,
    description:
      'Starts setting up an authenticator app; it is pending until confirmTotp. Needs a session, and as the first factor a fresh proof.',
    authScopes: { session: true },
    args: { input: t.arg({ type: FreshProofInput, required: false }) },
    resolve: (_r, { input }, ctx) => enrollTotp(ctx, input ?? {}),
  }),
);

builder.mutationField('confirmTotp', (t) =>
  t.field({
    errors: refusals,
    type: RecoveryCodesRef,
    description: 'Confirms the authenticator app with a code from it, and answers ten recovery codes, shown once.',
    authScopes: { session: true },
    args: { input: t.arg({ type: CodeInput, required: true }) },
    resolve: (_r, { input }, ctx) => confirmTotp(ctx, input),
  }),
);

builder.mutationField('removeTotp', (t) =>
  t.field({
    errors: refusals,
    type: MfaStatusRef,
    description: 'Removes the authenticator app; needs the password or a code from it.',
    authScopes: { session: true },
    args: { input: t.arg({ type: FreshProofInput, required: true }) },
    resolve: (_r, { input }, ctx) => removeTotp(ctx, input),
  }),
);

builder.mutationField('regenerateRecoveryCodes', (t) =>
  t.field({
    errors: refusals,
    type: RecoveryCodesRef,
    description: 'A new set of recovery codes; the old ones stop working. Needs the password or a code.',
    authScopes: { session: true },
    args: { input: t.arg({ type: FreshProofInput, required: true }) },
    resolve: (_r, { input }, ctx) => regenerateRecoveryCodes(ctx, input),
  }),
);

builder.mutationField('completeMfaLogin', (t) =>
  t.field({
    errors: refusals,
    type: LoginPayloadRef,
    description:
      'Completes a sign-in that answered an MfaChallenge, with a code of the authenticator app or a recovery code.',
    args: { input: t.arg({ type: MfaLoginInput, required: true }) },
    resolve: (_r, { input }, ctx) => completeMfaLogin(ctx, input),
  }),
);

builder.mutationField('resetMemberMfa', (t) =>
  t.field({
    errors: refusals,
    type: MfaStatusRef,
    description: "An owner removes a member's second factors (a lost phone). Audited; the member is mailed.",
    authScopes: firstParty(),
    args: { organizationId: t.arg.id({ required: true }), userId: t.arg.id({ required: true }) },
    resolve: (_r, args, ctx) => resetMemberMfa(ctx, args),
  }),
);
