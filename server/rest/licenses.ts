// Routes under /api/v1/licenses: the caller's own licenses and entitlements. Any valid token may call them.
// The check asked with an access token also has a direct path (licenseCheckWithAccessToken below), as userinfo
// has: it is what apps call on each use of a feature.
import type Koa from 'koa';
import { makeContext, type ContextBase } from '../../schema/context.ts';
import { limitsOf } from '../../schema/limits/rate-limits.ts';
import { checkLicenseWithAccessToken, type LicenseCheck } from '../../schema/modules/licenses/licenses.service.ts';
import { bearerToken } from '../middleware/actor.ts';
import { unstorableInput } from '../../schema/lib/storable.ts';
import { reportLimits, type RateLimitOptions } from '../middleware/rate-limit.ts';
import type { RequestState } from '../middleware/request.ts';
import { graphql, type ResultOf } from '../graphql/typed.ts';
import { route, type RestRoute } from './route.ts';

const CHECK_FIELDS = graphql(
  `fragment CheckFields on LicenseCheck { allowed code product feature subscriptionId status expiresAt }`,
);
/** The service's answer on the direct path, the operation's on the route: the same fields (a time, or its text). */
const presentCheck = (c: LicenseCheck | ResultOf<typeof CHECK_FIELDS>) => ({
  allowed: c.allowed,
  code: c.code,
  product: c.product,
  feature: c.feature,
  subscription_id: c.subscriptionId,
  status: c.status,
  expires_at: c.expiresAt,
});

export const licenseRoutes: RestRoute[] = [
  route({
    method: 'GET',
    path: '/licenses/entitlements',
    summary: "The caller's licenses, entitlements and licensed products",
    operation: graphql(`query { myLicenses { licenses entitlements products { id slug name features } } }`),
    respond: (d) => ({ body: d.myLicenses }),
  }),
  route({
    method: 'GET',
    path: '/licenses/check',
    summary: 'Whether the caller may use a product or one of its features',
    operation: graphql(
      `query($product: String, $feature: String, $entitlement: String) { licenseCheck(product: $product, feature: $feature, entitlement: $entitlement) { ...CheckFields } }`,
      [CHECK_FIELDS],
    ),
    variables: ({ query }) => ({ product: query.product, feature: query.feature, entitlement: query.entitlement }),
    respond: (d) => ({ body: presentCheck(d.licenseCheck) }),
  }),
];

const LICENSE_CHECK_PATH = '/api/v1/licenses/check';

/** The bearer value when it has the shape of a JWT (session tokens and API keys have none of its dots). */
function accessTokenOf(header: string): string | null {
  try {
    const token = bearerToken(header);
    return token?.includes('.') ? token : null;
  } catch {
    return null; // malformed: the general path says so
  }
}

/**
 * GET /api/v1/licenses/check with `Authorization: Bearer <access token>`, in one statement: a middleware ahead of
 * the routers, as nothing but this one path and method may take it. Every other request
 * (a session or API key, a repeated or unstorable parameter, a token or query the service cannot answer
 * outright) goes on to the route above, which answers as every route does.
 */
export function licenseCheckWithAccessToken(base: ContextBase, rateLimits: RateLimitOptions): Koa.Middleware {
  /** The check answered outright, or null for a request that goes on. */
  const direct = async (ctx: Koa.Context): Promise<LicenseCheck | null> => {
    if (ctx.path !== LICENSE_CHECK_PATH || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return null;
    const bearer = accessTokenOf(ctx.get('Authorization'));
    if (!bearer) return null;
    const query = new URLSearchParams(ctx.querystring);
    const input = {
      product: query.get('product') ?? undefined,
      feature: query.get('feature') ?? undefined,
      entitlement: query.get('entitlement') ?? undefined,
    };
    const repeated = query.size > 1 && Object.keys(input).some((k) => query.getAll(k).length > 1);
    if (repeated || unstorableInput([[input, 'query']]).length) return null;
    const context = makeContext(base, null, ctx.state.request as RequestState);
    return checkLicenseWithAccessToken(context, bearer, input, {
      limitsOf: (actor) => limitsOf(actor, rateLimits),
      report: (states) => reportLimits(ctx, states),
    });
  };
  return async (ctx, next) => {
    const check = await direct(ctx);
    if (!check) {
      await next();
      return;
    }
    ctx.state.route = LICENSE_CHECK_PATH;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = presentCheck(check);
  };
}
