// Passkeys: the caller's own (options, register, list, rename, remove; a session only) and signing in with one.
import { builder } from '../../builder.ts';
import { LoginPayloadRef } from '../auth/auth.graphql.ts';
import { FreshProofInput } from '../mfa/mfa.graphql.ts';
import {
  myPasskeys,
  passkeyRegistrationOptions,
  passkeySignIn,
  passkeySignInOptions,
  passkeysAvailable,
  registerPasskey,
  removePasskey,
  renamePasskey,
  type PasskeyView,
} from './passkeys.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { PASSKEYS_ERROR_CODES } from './passkeys.errors.ts';

const refusals = mutationErrors('PasskeysErrorCode', PASSKEYS_ERROR_CODES);

const PasskeyRef = builder.objectRef<PasskeyView>('Passkey').implement({
  description: 'A WebAuthn credential of the caller: it signs in without a password and counts as a second factor.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true, description: 'The last sign-in with it.' }),
    deviceType: t.exposeString('deviceType', {
      description: 'singleDevice (bound to one authenticator) or multiDevice (synced between devices).',
    }),
    backedUp: t.exposeBoolean('backedUp', { description: 'A synced passkey that its provider has backed up.' }),
    transports: t.exposeStringList('transports', {
      description: 'How the browser reached the authenticator (internal, usb, nfc, ble, hybrid).',
    }),
  }),
});

const RemovedPasskeyRef = builder.objectRef<{ id: string }>('RemovedPasskey').implement({
  fields: (t) => ({ id: t.exposeID('id') }),
});

const RegisterPasskeyInput = builder.inputType('RegisterPasskeyInput', {
  fields: (t) => ({
    name: t.string({ required: true, description: 'What the person calls it (1 to 100 characters).' }),
    response: t.field({
      type: 'JSON',
      required: true,
      description: "The browser's answer to passkeyRegistrationOptions (navigator.credentials.create as JSON).",
    }),
  }),
});

const PasskeySignInInput = builder.inputType('PasskeySignInInput', {
  fields: (t) => ({
    response: t.field({
      type: 'JSON',
      required: true,
      description: "The browser's answer to passkeySignInOptions (navigator.credentials.get as JSON).",
    }),
    mfaToken: t.string({
      required: false,
      description: 'The token of a password sign-in waiting for a second factor; a passkey signs in without it.',
    }),
  }),
});

builder.queryField('passkeysAvailable', (t) =>
  t.boolean({
    description: "Whether passkeys can be used here: not when BASE_URL's host is an IP address, which browsers refuse.",
    resolve: (_root, _args, ctx) => passkeysAvailable(ctx),
  }),
);

builder.queryField('myPasskeys', (t) =>
  t.field({
    type: [PasskeyRef],
    description: "The caller's passkeys, oldest first. Needs a session.",
    authScopes: { session: true },
    resolve: (_root, _args, ctx) => myPasskeys(ctx),
  }),
);

builder.mutationField('passkeyRegistrationOptions', (t) =>
  t.field({
    type: 'JSON',
    description:
      'WebAuthn creation options for a new passkey of the caller (for navigator.credentials.create); they work once, for 5 minutes. As the first factor, a fresh proof is needed.',
    authScopes: { session: true },
    args: { input: t.arg({ type: FreshProofInput, required: false }) },
    resolve: (_root, { input }, ctx) => passkeyRegistrationOptions(ctx, input ?? {}),
  }),
);

builder.mutationField('registerPasskey', (t) =>
  t.field({
    errors: refusals,
    type: PasskeyRef,
    description: "Keeps a new passkey from the browser's answer to passkeyRegistrationOptions.",
    authScopes: { session: true },
    args: { input: t.arg({ type: RegisterPasskeyInput, required: true }) },
    resolve: (_root, { input }, ctx) => registerPasskey(ctx, input),
  }),
);

builder.mutationField('renamePasskey', (t) =>
  t.field({
    errors: refusals,
    type: PasskeyRef,
    authScopes: { session: true },
    args: { id: t.arg.id({ required: true }), name: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => renamePasskey(ctx, args),
  }),
);

builder.mutationField('removePasskey', (t) =>
  t.field({
    errors: refusals,
    type: RemovedPasskeyRef,
    description: "Removes one of the caller's passkeys; needs the account's password.",
    authScopes: { session: true },
    args: { id: t.arg.id({ required: true }), password: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => removePasskey(ctx, args),
  }),
);

builder.mutationField('passkeySignInOptions', (t) =>
  t.field({
    type: 'JSON',
    description:
      'WebAuthn request options for signing in with any passkey (for navigator.credentials.get); they work once, for 5 minutes.',
    resolve: (_root, _args, ctx) => passkeySignInOptions(ctx),
  }),
);

builder.mutationField('passkeySignIn', (t) =>
  t.field({
    errors: refusals,
    type: LoginPayloadRef,
    description:
      "Signs in with the browser's answer to passkeySignInOptions, without a password. Failures count against the sign-in throttle of the address.",
    args: { input: t.arg({ type: PasskeySignInInput, required: true }) },
    resolve: (_root, { input }, ctx) => passkeySignIn(ctx, input),
  }),
);
