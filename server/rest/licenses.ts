// Routes under /api/v1/licenses: the caller's own licenses and entitlements. Any valid token may call them.
import type { RestRoute } from './route.ts';

export const licenseRoutes: RestRoute[] = [
  {
    method: 'GET', path: '/licenses/entitlements', summary: "The caller's licenses, entitlements and licensed products",
    operation: 'query { myLicenses { licenses entitlements products { id slug name features } } }',
    respond: (d) => ({ body: d.myLicenses }),
  },
  {
    method: 'GET', path: '/licenses/check', summary: 'Whether the caller may use a product or one of its features',
    operation: `query($product: String, $feature: String, $entitlement: String) {
      licenseCheck(product: $product, feature: $feature, entitlement: $entitlement) { allowed code product feature subscriptionId status expiresAt } }`,
    variables: ({ query }) => ({ product: query.product, feature: query.feature, entitlement: query.entitlement }),
    respond: (d) => {
      const c = d.licenseCheck;
      return { body: { allowed: c.allowed, code: c.code, product: c.product, feature: c.feature, subscription_id: c.subscriptionId, status: c.status, expires_at: c.expiresAt } };
    },
  },
];
