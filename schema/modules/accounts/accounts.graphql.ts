// Accounts that look after themselves: password reset and address verification by mailed links.
import { builder } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import {
  confirmPasswordReset,
  requestEmailVerification,
  requestPasswordReset,
  sendPasswordResetLink,
  verifyEmail,
} from './accounts.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { ACCOUNTS_ERROR_CODES } from './accounts.errors.ts';

const refusals = mutationErrors('AccountsErrorCode', ACCOUNTS_ERROR_CODES);

const RequestPasswordResetInput = builder.inputType('RequestPasswordResetInput', {
  fields: (t) => ({ email: t.string({ required: true }) }),
});

const ConfirmPasswordResetInput = builder.inputType('ConfirmPasswordResetInput', {
  fields: (t) => ({
    token: t.string({ required: true }),
    password: t.string({ required: true, description: 'The new password (12 characters or more).' }),
  }),
});

const VerifyEmailInput = builder.inputType('VerifyEmailInput', {
  fields: (t) => ({ token: t.string({ required: true }) }),
});

const VerificationSent = builder.objectRef<{ email: string }>('VerificationSent').implement({
  fields: (t) => ({ email: t.exposeString('email', { description: 'Where the link was mailed.' }) }),
});

builder.mutationField('requestPasswordReset', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    description: 'Mails a reset link to the address if an account uses it. The answer is the same either way.',
    args: { input: t.arg({ type: RequestPasswordResetInput, required: true }) },
    resolve: (_root, { input }, ctx) => requestPasswordReset(ctx, input),
  }),
);

builder.mutationField('confirmPasswordReset', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    description: 'Sets a new password with a reset link token. Every session and token of the person ends.',
    args: { input: t.arg({ type: ConfirmPasswordResetInput, required: true }) },
    resolve: (_root, { input }, ctx) => confirmPasswordReset(ctx, input),
  }),
);

builder.mutationField('sendPasswordReset', (t) =>
  t.boolean({
    errors: { ...refusals, directResult: false },
    description: "Mails a person a password reset link (platform admins). Nobody can set another person's password.",
    authScopes: firstParty({ platformAdmin: true }),
    args: { userId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => sendPasswordResetLink(ctx, String(args.userId)),
  }),
);

builder.mutationField('requestEmailVerification', (t) =>
  t.field({
    errors: refusals,
    type: VerificationSent,
    description:
      'Mails the caller a verification link: for the new address it asked for, else for its own unverified one.',
    authScopes: firstParty({ person: true }),
    resolve: (_root, _args, ctx) => requestEmailVerification(ctx),
  }),
);

builder.mutationField('verifyEmail', (t) =>
  t.prismaField({
    errors: refusals,
    type: 'User',
    description: "Proves an address with a verification link token; a new address becomes the account's address.",
    args: { input: t.arg({ type: VerifyEmailInput, required: true }) },
    resolve: (_query, _root, { input }, ctx) => verifyEmail(ctx, input),
  }),
);
