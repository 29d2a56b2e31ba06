// Licenses and entitlements (docs/architecture.md#subscriptions-seats-and-licenses): a user's licenses are the
// product slugs of their seats on active or trial subscriptions not past end_date, in the organization the caller
// acts in; entitlements are "<slug>:<feature>" for each feature of those products. The check is a hot path
// (docs/architecture.md#hot-paths): one statement, no transaction.
import { z } from 'zod';
import type { Actor, Context, OAuthActor } from '../../context.ts';
import { hotQuery, hotStatement, Prisma, type Db, type Placeholders } from '../../db.ts';
import { countSql, type RateLimit, type RateLimitState } from '../../limits/rate-limits.ts';
import type { CounterRow } from '../../lib/rate-limit-leases.ts';
import { InvalidToken } from '../oauth/oauth.errors.ts';
import {
  tokenGrantFrom,
  tokenGrantKeys,
  tokenGrantStands,
  forTessera,
  verifyAccessTokenSignature,
  type TokenGrantKeys,
} from '../oauth/verify-access-token.ts';
import { actingOrganizationId, awaitingFactorSql, awaitsFactor, requireUserId, userIdOf } from '../../auth/access.ts';
import { MfaEnrollmentRequiredError } from '../../auth/access.errors.ts';
import { parseInput } from '../../lib/input.ts';

export interface LicensedProduct {
  id: string;
  slug: string;
  name: string;
  features: string[];
}

export interface Licenses {
  licenses: string[];
  entitlements: string[];
  products: LicensedProduct[];
}

/** The products `userId` holds a live seat of in `organizationId` at `now`, by slug. For userinfo and scopes too. */
export async function licensedProducts(
  db: Db,
  userId: string,
  organizationId: string | null,
  now: Date,
): Promise<LicensedProduct[]> {
  if (!organizationId) return [];
  return db.$queryRaw<LicensedProduct[]>`
    select distinct p.id, p.slug, p.name, p.features
    from seat_assignments a
    join subscriptions s on s.id = a.subscription_id
    join products p on p.id = s.product_id
    where a.user_id = ${userId} and a.organization_id = ${organizationId}
      and s.status in ('active', 'trial') and (s.end_date is null or s.end_date > ${now})
    order by p.slug`;
}

export function toLicenses(products: LicensedProduct[]): Licenses {
  return {
    licenses: products.map((p) => p.slug),
    entitlements: products.flatMap((p) => p.features.map((f) => `${p.slug}:${f}`)),
    products,
  };
}

export async function myLicenses(ctx: Context): Promise<Licenses> {
  const userId = requireUserId(ctx);
  const organizationId = actingOrganizationId(ctx);
  // A session of an organization that requires a second factor its person lacks reads nothing there
  // (docs/architecture.md#second-factors): for sessions only, the request's memo of memberships (one read, and one of
  // the factors when an organization of theirs requires one); tokens and API keys read nothing more.
  if (await awaitsFactor(ctx)) throw new MfaEnrollmentRequiredError();
  return toLicenses(await licensedProducts(ctx.db, userId, organizationId, ctx.clock.now()));
}

export const LICENSE_CODES = [
  'VALID',
  'TRIAL',
  'NO_SEAT',
  'NO_SUBSCRIPTION',
  'EXPIRED',
  'CANCELLED',
  'FEATURE_MISSING',
  'UNKNOWN_PRODUCT',
] as const;
export type LicenseCode = (typeof LICENSE_CODES)[number];

export interface LicenseCheck {
  allowed: boolean;
  code: LicenseCode;
  product: string;
  feature: string | null;
  subscriptionId: string | null;
  status: string | null;
  expiresAt: Date | null;
}

const checkInput = z
  .object({
    product: z.string().min(1, 'must not be empty').max(63).nullish(),
    feature: z.string().min(1, 'must not be empty').max(100).nullish(),
    entitlement: z
      .string()
      .regex(/^[^:]{1,63}:.{1,100}$/s, 'must be <product slug>:<feature>')
      .nullish(),
  })
  .strict()
  .refine((v) => !!v.product !== !!v.entitlement, {
    message: 'give either product (and optionally feature) or entitlement',
    path: ['product'],
  })
  .refine((v) => !(v.entitlement && v.feature), {
    message: 'give feature inside entitlement, not beside it',
    path: ['feature'],
  })
  .transform((v) => {
    if (v.entitlement) {
      const at = v.entitlement.indexOf(':');
      return { product: v.entitlement.slice(0, at), feature: v.entitlement.slice(at + 1) };
    }
    // The first refinement lets through no input without one of the two (zod transforms only what passed).
    if (!v.product) throw new Error('checkInput: neither a product nor an entitlement passed the refinement');
    return { product: v.product, feature: v.feature ?? null };
  });

interface CheckRow {
  product_id: string | null;
  has_feature: boolean | null;
  subscription_id: string | null;
  status: string | null;
  end_date: Date | null;
  live: boolean | null;
  seated: boolean | null;
}

/**
 * SQL, the check's one row: the product, and of the organization's subscriptions to it the one that decides, in
 * this order: a live one the user has a seat on, a live one (no seat), one the user had a seat on, the newest.
 * `userId` and `organizationId` are SQL (values or columns of the statement around it).
 */
function checkSql(
  userId: Prisma.Sql,
  organizationId: Prisma.Sql,
  slug: string,
  feature: string | null,
  now: Date,
): Prisma.Sql {
  return Prisma.sql`
    select p.id as product_id, (${feature}::text is null or ${feature}::text = any(p.features)) as has_feature,
           s.id as subscription_id, s.status, s.end_date, s.live, s.seated
    from (select 1) one
    left join products p on p.slug = ${slug}::text
    left join lateral (
      select s.id, s.status::text as status, s.end_date, x.live, x.seated
      from subscriptions s
      cross join lateral (select
          s.status in ('active', 'trial') and (s.end_date is null or s.end_date > ${now}::timestamp(3)) as live,
          exists (select 1 from seat_assignments a where a.subscription_id = s.id and a.user_id = ${userId}) as seated) x
      where s.product_id = p.id and s.organization_id = ${organizationId}
      order by (x.live and x.seated) desc, x.live desc, x.seated desc, s.created_at desc
      limit 1) s on true`;
}

function decide(row: CheckRow): LicenseCode {
  if (!row.product_id) return 'UNKNOWN_PRODUCT';
  if (!row.has_feature) return 'FEATURE_MISSING';
  if (!row.subscription_id) return 'NO_SUBSCRIPTION';
  if (row.live) return row.seated ? (row.status === 'trial' ? 'TRIAL' : 'VALID') : 'NO_SEAT';
  return row.status === 'cancelled' ? 'CANCELLED' : 'EXPIRED';
}

function present(row: CheckRow, product: string, feature: string | null): LicenseCheck {
  const code = decide(row);
  const known = code !== 'UNKNOWN_PRODUCT' && code !== 'FEATURE_MISSING';
  return {
    allowed: code === 'VALID' || code === 'TRIAL',
    code,
    product,
    feature,
    subscriptionId: known ? row.subscription_id : null,
    status: known ? row.status : null,
    expiresAt: known ? row.end_date : null,
  };
}

export async function checkLicense(ctx: Context, input: unknown): Promise<LicenseCheck> {
  const userId = requireUserId(ctx);
  const { product, feature } = parseInput(checkInput, input);
  const user = Prisma.sql`${userId}::text`;
  const organization = Prisma.sql`${actingOrganizationId(ctx)}::text`;
  const check = checkSql(user, organization, product, feature, ctx.clock.now());
  // A session is held back in an organization that requires a second factor its person lacks
  // (docs/architecture.md#second-factors): asked in the check's own statement, so that it stays one.
  const [row] =
    ctx.actor?.kind === 'user'
      ? await hotQuery<CheckRow & { awaiting: boolean }>(
          ctx.db,
          Prisma.sql`select chk.*, ${awaitingFactorSql(user, organization)} as awaiting from (${check}) chk`,
        )
      : await hotQuery<CheckRow & { awaiting?: boolean }>(ctx.db, check);
  // The check is FROM (select 1): it answers one row whatever it finds.
  if (!row) throw new Error('checkLicense: the check answered no row');
  if (row.awaiting) throw new MfaEnrollmentRequiredError();
  return present(row, product, feature);
}

type CheckWithTokenRow = CheckRow & { user_id: string | null };
type CheckWithTokenParams = TokenGrantKeys & { product: string; feature: string | null; now: Date };

/** SQL, t: the token's grant, no row unless it stands (tokenGrantStands). */
const standingGrant = (p: Placeholders<CheckWithTokenParams>) =>
  Prisma.sql`t as (select g.user_id from ${tokenGrantFrom(p)} and ${tokenGrantStands(p)})`;

/** The check for t's user. */
const checkForGrant = (p: Placeholders<CheckWithTokenParams>) =>
  checkSql(Prisma.sql`t.user_id`, Prisma.sql`${p.organizationId}::text`, p.product, p.feature, p.now);

/**
 * The statements of checkLicenseWithAccessToken, composed once: the grant and the check, and when the process holds
 * no lease on the caller's rate limit, a block of requests leased from it too (only for a caller t holds).
 */
const CHECK_WITH_TOKEN = hotStatement<CheckWithTokenParams, CheckWithTokenRow>(
  (p) =>
    Prisma.sql`with ${standingGrant(p)} select t.user_id, chk.* from t cross join lateral (${checkForGrant(p)}) chk`,
);
const CHECK_WITH_TOKEN_LEASING = hotStatement<
  CheckWithTokenParams & { key: string; windowSeconds: number; block: number },
  CheckWithTokenRow & CounterRow
>(
  (p) => Prisma.sql`
    with ${standingGrant(p)}, counted as (${countSql(p, p.block, p.now, Prisma.sql`from t`)})
    select t.user_id, counted.count, counted.window_start, chk.*
    from t cross join counted cross join lateral (${checkForGrant(p)}) chk`,
);

/** How a caller's rate limits are found and reported: the general path's rate-limit step, handed in. */
export interface CountedLimits {
  limitsOf: (actor: Actor) => RateLimit[];
  /** Reports where the limits stand; throws when one is exceeded, so that nothing is answered. */
  report: (states: RateLimitState[]) => void;
}

/**
 * The check asked with an OAuth access token, as an app asks on each use of a feature: the token's grant
 * (tokenGrantStands) and the check in one statement (docs/architecture.md#hot-paths), counted against the caller's
 * rate limit from the process's lease, or when it holds none by the same statement leasing a block (a request
 * taken from the lease for a grant that does not stand is given back), then answered in the general path's order
 * (credentials, limits, user, check). Null when this path cannot answer
 * outright (a signature or an input that is not valid): the general path answers those with their exact errors.
 */
export async function checkLicenseWithAccessToken(
  ctx: Context,
  token: string,
  input: unknown,
  limits: CountedLimits,
): Promise<LicenseCheck | null> {
  const parsed = checkInput.safeParse(input);
  const signed = parsed.success ? await verifyAccessTokenSignature(ctx, token).catch(() => null) : null;
  // A token for another resource (RFC 8707) is refused by the general path, as everywhere in Tessera's API.
  if (!parsed.success || !signed || !forTessera(ctx, signed)) return null;
  const { product, feature } = parsed.data;
  const now = ctx.clock.now();
  const actor: OAuthActor = {
    kind: 'oauth',
    userId: null,
    clientId: signed.clientId,
    organizationId: signed.organizationId,
    scope: signed.scope,
    grantId: signed.grantId,
  };
  // An access token answers to one limit, its organization's; were there others, the general path counts them.
  const applying = limits.limitsOf(actor);
  const limit = applying.length === 1 ? applying[0] : undefined;
  if (!limit) return null;
  const params = { ...tokenGrantKeys(signed), product, feature, now };
  const answered: { row?: CheckWithTokenRow } = {};
  const state = await ctx.rateLimitLeases.count(limit, now, async (block) => {
    const [row] = await CHECK_WITH_TOKEN_LEASING(ctx.db, {
      ...params,
      key: limit.key,
      windowSeconds: limit.windowSeconds,
      block,
    });
    answered.row = row;
    return row ?? null;
  });
  if (state && !answered.row) {
    [answered.row] = await CHECK_WITH_TOKEN(ctx.db, params);
    if (!answered.row) ctx.rateLimitLeases.giveBack(limit, now);
  }
  const row = answered.row;
  if (!state || !row) throw new InvalidToken('Invalid or expired credentials');
  limits.report([state]);
  userIdOf({ ...actor, userId: row.user_id });
  return present(row, product, feature);
}
