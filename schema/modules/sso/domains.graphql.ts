// An organization's domains for single sign-on, proven by a DNS TXT record (docs/architecture.md#single-sign-on).
import { builder } from '../../builder.ts';
import { firstParty } from '../../auth/scopes.ts';
import { pageType } from '../../page-type.ts';
import { addDomain, deleteDomain, listDomains, verificationOf, verifyDomain } from './domains.service.ts';
import { mutationErrors } from '../../mutation-errors.ts';
import { SSO_ERROR_CODES } from './sso.errors.ts';

const refusals = mutationErrors('SsoErrorCode', SSO_ERROR_CODES);

type Verification = ReturnType<typeof verificationOf>;
const DomainVerificationRef = builder.objectRef<Verification>('DomainVerification').implement({
  description: 'The DNS record that proves the domain: publish it, then call verifyDomain.',
  fields: (t) => ({
    type: t.exposeString('type', { description: 'Always TXT.' }),
    name: t.exposeString('name', { description: '_tessera-verification.<domain>' }),
    value: t.exposeString('value', { description: 'tessera-verification=<token>' }),
  }),
});

const DomainRef = builder.prismaObject('Domain', {
  description:
    "A domain an organization claims; verified once its TXT record was found, and then no other organization's.",
  fields: (t) => ({
    id: t.exposeID('id'),
    domain: t.exposeString('domain', {
      description: 'Lower-case ASCII; an internationalized name in punycode (xn--).',
    }),
    verified: t.boolean({ resolve: (d) => d.verifiedAt !== null }),
    verifiedAt: t.expose('verifiedAt', { type: 'DateTime', nullable: true }),
    checkedAt: t.expose('checkedAt', {
      type: 'DateTime',
      nullable: true,
      description: 'The last check of the TXT record, found or not.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    verification: t.field({ type: DomainVerificationRef, resolve: (d) => verificationOf(d) }),
  }),
});

const AddDomainInput = builder.inputType('AddDomainInput', {
  fields: (t) => ({
    domain: t.string({
      required: true,
      description: 'example.com: no scheme, port, path or wildcard; an IDN is stored as punycode.',
    }),
    organizationId: t.string({ description: "Defaults to the caller's current organization." }),
  }),
});

builder.queryField('domains', (t) =>
  t.field({
    type: pageType('DomainPage', DomainRef),
    description: "An organization's domains (owners and admins).",
    authScopes: { authenticated: true },
    args: { organizationId: t.arg.string(), limit: t.arg.int(), cursor: t.arg.string() },
    resolve: (_root, { organizationId, ...page }, ctx) => listDomains(ctx, organizationId, page),
  }),
);

builder.mutationField('addDomain', (t) =>
  t.field({
    errors: refusals,
    type: DomainRef,
    description: 'Claims a domain (owners only); prove it by publishing its verification record, then verifyDomain.',
    authScopes: firstParty(),
    args: { input: t.arg({ type: AddDomainInput, required: true }) },
    resolve: (_root, { input }, ctx) => addDomain(ctx, input.organizationId, { domain: input.domain }),
  }),
);

builder.mutationField('verifyDomain', (t) =>
  t.field({
    errors: refusals,
    type: DomainRef,
    description:
      'Owners only. Looks up the TXT record: found, the domain is verified; not found, verification_failed says what was; domain_taken when another organization proved it.',
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => verifyDomain(ctx, String(id)),
  }),
);

builder.mutationField('deleteDomain', (t) =>
  t.field({
    errors: refusals,
    type: DomainRef,
    description: 'Removes the domain (owners only); connections stop serving it.',
    authScopes: firstParty(),
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => deleteDomain(ctx, String(id)),
  }),
);
