import { builder } from '../../builder.ts';
import { present } from '../../lib/input.ts';
import {
  checkLicense,
  LICENSE_CODES,
  myLicenses,
  type LicenseCheck,
  type LicensedProduct,
  type Licenses,
} from './licenses.service.ts';

// Any valid access token may read its user's own licenses (docs/architecture.md#authorization): these fields skip the type-level `api` scope.
const ANY_TOKEN = { skipTypeScopes: true, authScopes: { authenticated: true } } as const;

const LicenseCodeEnum = builder.enumType('LicenseCode', { values: LICENSE_CODES });

const LicensedProductRef = builder.objectRef<LicensedProduct>('LicensedProduct').implement({
  fields: (t) => ({
    id: t.exposeID('id'),
    slug: t.exposeString('slug'),
    name: t.exposeString('name'),
    features: t.exposeStringList('features'),
  }),
});

const LicensesRef = builder.objectRef<Licenses>('Licenses').implement({
  fields: (t) => ({
    licenses: t.exposeStringList('licenses', { description: 'Product slugs.' }),
    entitlements: t.exposeStringList('entitlements', { description: '"<product slug>:<feature>".' }),
    products: t.field({ type: [LicensedProductRef], resolve: (l) => l.products }),
  }),
});

const LicenseCheckRef = builder.objectRef<LicenseCheck>('LicenseCheck').implement({
  fields: (t) => ({
    allowed: t.exposeBoolean('allowed'),
    code: t.expose('code', { type: LicenseCodeEnum }),
    product: t.exposeString('product'),
    feature: t.exposeString('feature', { nullable: true }),
    subscriptionId: t.exposeString('subscriptionId', { nullable: true }),
    status: t.exposeString('status', { nullable: true }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', nullable: true }),
  }),
});

builder.queryField('myLicenses', (t) =>
  t.field({
    ...ANY_TOKEN,
    type: LicensesRef,
    description: "The caller's licenses and entitlements in the organization it acts in.",
    resolve: (_root, _args, ctx) => myLicenses(ctx),
  }),
);

builder.queryField('licenseCheck', (t) =>
  t.field({
    ...ANY_TOKEN,
    type: LicenseCheckRef,
    description:
      'Whether the caller may use a product (and a feature of it); every business outcome is a code, not an error.',
    args: { product: t.arg.string(), feature: t.arg.string(), entitlement: t.arg.string() },
    resolve: (_root, args, ctx) => checkLicense(ctx, present(args)),
  }),
);
