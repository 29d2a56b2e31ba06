import { builder, RoleEnum } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { pageType } from '../../page-type.ts';
import { present } from '../../lib/input.ts';
import type { OrganizationWithRole } from './organizations.service.ts';
import {
  createOrganization,
  getOrganization,
  listOrganizations,
  myOrganizations,
  updateOrganization,
} from './organizations.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { ORGANIZATIONS_ERROR_CODES } from './organizations.errors.ts';

const refusals = mutationErrors('OrganizationsErrorCode', ORGANIZATIONS_ERROR_CODES);

export const OrganizationSummaryRef = builder.objectRef<{ id: string; name: string }>('OrganizationSummary').implement({
  fields: (t) => ({ id: t.exposeID('id'), name: t.exposeString('name') }),
});

export const OrganizationRef = builder.objectRef<OrganizationWithRole>('Organization').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    isOperator: t.exposeBoolean('isOperator', {
      description: 'The operator organization: its owners and admins administer the platform.',
    }),
    requireMfa: t.exposeBoolean('requireMfa', {
      description: 'Members must sign in with a second factor; set by owners.',
    }),
    allowMetadataClients: t.exposeBoolean('allowMetadataClients', {
      description:
        'Applications known only by a client ID metadata document (not registered here) may sign members in; set by admins.',
    }),
    role: t.field({ type: RoleEnum, nullable: true, description: "The caller's role here.", resolve: (o) => o.role }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

const OrganizationPage = pageType('OrganizationPage', OrganizationRef);

builder.queryField('organizations', (t) =>
  t.field({
    type: OrganizationPage,
    description:
      "Every organization for platform admins, else the caller's own; `search` keeps those whose name contains it (any case).",
    authScopes: { authenticated: true },
    args: { limit: t.arg.int(), cursor: t.arg.string(), search: t.arg.string() },
    resolve: (_root, { search, ...page }, ctx) => listOrganizations(ctx, present(page), present({ search })),
  }),
);

builder.queryField('myOrganizations', (t) =>
  t.field({
    type: [OrganizationRef],
    description: 'The organizations the caller belongs to, with its role in each.',
    skipTypeScopes: true,
    authScopes: { $all: { authenticated: true, profileRead: true } },
    resolve: (_root, _args, ctx) => myOrganizations(ctx),
  }),
);

builder.queryField('organization', (t) =>
  t.field({
    type: OrganizationRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) => getOrganization(ctx, String(args.id)),
  }),
);

const CreateOrganizationInput = builder.inputType('CreateOrganizationInput', {
  fields: (t) => ({ name: t.string({ required: true }) }),
});
const UpdateOrganizationInput = builder.inputType('UpdateOrganizationInput', {
  fields: (t) => ({
    name: t.string(),
    requireMfa: t.boolean({ description: 'Owners only; needs a second factor of your own to turn on.' }),
    allowMetadataClients: t.boolean({
      description: 'Admins; turning it off ends what such applications were granted here.',
    }),
  }),
});

builder.mutationField('createOrganization', (t) =>
  t.field({
    errors: refusals,
    type: OrganizationRef,
    description: 'Creates an organization owned by the caller.',
    // A person's own: through the portal, a session, or Tessera's command line; no app's token.
    authScopes: { $any: { ...firstParty({ person: true }), commandLine: true } },
    args: { input: t.arg({ type: CreateOrganizationInput, required: true }) },
    resolve: (_root, { input }, ctx) => createOrganization(ctx, input),
  }),
);

builder.mutationField('updateOrganization', (t) =>
  t.field({
    errors: refusals,
    type: OrganizationRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdateOrganizationInput, required: true }) },
    resolve: (_root, args, ctx) => updateOrganization(ctx, String(args.id), present(args.input)),
  }),
);
