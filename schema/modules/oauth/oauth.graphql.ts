// The consent page's query and mutation (oauth/consent-page.service.ts): what a pending authorization request asks
// for, and the user's answer.
import { builder } from '../../builder.ts';
import { answerConsent, consentPrompt } from './consent-page.service.ts';
import type { ConsentPrompt } from './authorize.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
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
    scopes: t.field({ type: [ScopeDescription], resolve: (p) => p.scopes }),
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
