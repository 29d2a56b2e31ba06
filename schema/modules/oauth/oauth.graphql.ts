// The consent page's query and mutation (oauth/consent-page.service.ts): what a pending authorization request asks
// for, and the user's answer; and the device page's.
import { builder } from '../../builder.ts';
import { answerConsent, consentPrompt } from './consent-page.service.ts';
import type { ConsentPrompt } from './authorize.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { decideDeviceRequest, describeDeviceRequest, type DeviceRequest } from './device.service.ts';
import { OAUTH_ERROR_CODES } from './oauth.errors.ts';

const refusals = mutationErrors('OAuthErrorCode', OAUTH_ERROR_CODES);

const ScopeDescription = builder.objectRef<{ name: string; description: string }>('ScopeDescription').implement({
  fields: (t) => ({ name: t.exposeString('name'), description: t.exposeString('description') }),
});

const ConsentPromptRef = builder.objectRef<ConsentPrompt>('ConsentPrompt').implement({
  description: 'What the consent page shows for a pending authorization request.',
  fields: (t) => ({
    clientName: t.string({ resolve: (p) => p.client.name }),
    clientDescription: t.string({ resolve: (p) => p.client.description }),
    organizationName: t.string({ resolve: (p) => p.organization.name }),
    unregisteredHost: t.string({
      nullable: true,
      description:
        'The host of an application known only by its client ID metadata document, not registered with the organization.',
      resolve: (p) => p.client.unregisteredHost,
    }),
    scopes: t.field({ type: [ScopeDescription], resolve: (p) => p.scopes }),
    resources: t.stringList({
      description: 'The resources (RFC 8707) the access is for, such as an MCP server; none: the application itself.',
      resolve: (p) => p.resources,
    }),
  }),
});

builder.queryField('consentPrompt', (t) =>
  t.field({
    type: ConsentPromptRef,
    authScopes: { session: true },
    args: { request: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => consentPrompt(ctx, args.request),
  }),
);

const ConsentDecision = builder.objectRef<{ redirectTo: string }>('ConsentDecision').implement({
  fields: (t) => ({
    redirectTo: t.exposeString('redirectTo', { description: 'Where to send the browser: back to the application.' }),
  }),
});

builder.mutationField('decideConsent', (t) =>
  t.field({
    errors: refusals,
    type: ConsentDecision,
    authScopes: { session: true },
    args: { request: t.arg.string({ required: true }), approve: t.arg.boolean({ required: true }) },
    resolve: (_root, args, ctx) => answerConsent(ctx, args.request, args.approve),
  }),
);

// The device page (/device, oauth/device.service.ts): what a typed user code asks for, and the person's answer.
const DeviceRequestRef = builder.objectRef<DeviceRequest>('DeviceRequest').implement({
  description: 'A pending device authorization (RFC 8628) as /device shows it.',
  fields: (t) => ({
    userCode: t.exposeString('userCode', { description: 'As the device shows it: XXXX-XXXX.' }),
    clientName: t.exposeString('clientName'),
    clientDescription: t.exposeString('clientDescription'),
    organizationName: t.exposeString('organizationName'),
    scopes: t.field({ type: [ScopeDescription], resolve: (r) => r.scopes }),
  }),
});

builder.queryField('deviceRequest', (t) =>
  t.field({
    type: DeviceRequestRef,
    authScopes: { session: true },
    description: 'The pending request of a user code; a wrong one counts against the sign-in throttle.',
    args: { userCode: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => describeDeviceRequest(ctx, args.userCode),
  }),
);

const DeviceDecision = builder.objectRef<{ approved: boolean }>('DeviceDecision').implement({
  fields: (t) => ({ approved: t.exposeBoolean('approved') }),
});

builder.mutationField('decideDeviceRequest', (t) =>
  t.field({
    errors: refusals,
    type: DeviceDecision,
    authScopes: { session: true },
    args: { userCode: t.arg.string({ required: true }), approve: t.arg.boolean({ required: true }) },
    resolve: (_root, args, ctx) => decideDeviceRequest(ctx, args.userCode, args.approve),
  }),
);
