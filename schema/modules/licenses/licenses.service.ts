// Licenses and entitlements (DESIGN 8): a user's licenses are the product slugs of their seats on active or trial
// subscriptions not past end_date, in the organization the caller acts in; entitlements are "<slug>:<feature>"
// for each feature of those products. The check is a hot path (DESIGN 5): one statement, no transaction.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import type { Db } from '../../db.ts';
import { actingOrganizationId, requireUserId } from '../../auth/access.ts';
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
export async function licensedProducts(db: Db, userId: string, organizationId: string | null, now: Date): Promise<LicensedProduct[]> {
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
  return toLicenses(await licensedProducts(ctx.db, userId, actingOrganizationId(ctx), ctx.clock.now()));
}

export const LICENSE_CODES = ['VALID', 'TRIAL', 'NO_SEAT', 'NO_SUBSCRIPTION', 'EXPIRED', 'CANCELLED', 'FEATURE_MISSING', 'UNKNOWN_PRODUCT'] as const;
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
    entitlement: z.string().regex(/^[^:]{1,63}:.{1,100}$/s, 'must be <product slug>:<feature>').nullish(),
  })
  .strict()
  .refine((v) => !!v.product !== !!v.entitlement, { message: 'give either product (and optionally feature) or entitlement', path: ['product'] })
  .refine((v) => !(v.entitlement && v.feature), { message: 'give feature inside entitlement, not beside it', path: ['feature'] })
  .transform((v) => {
    if (!v.entitlement) return { product: v.product!, feature: v.feature ?? null };
    const at = v.entitlement.indexOf(':');
    return { product: v.entitlement.slice(0, at), feature: v.entitlement.slice(at + 1) };
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
 * The one statement: the product, and of the organization's subscriptions to it the one that decides, in this
 * order: a live one the user has a seat on, a live one (no seat), one the user had a seat on, the newest.
 */
async function checkRow(db: Db, userId: string, organizationId: string | null, slug: string, feature: string | null, now: Date) {
  const [row] = await db.$queryRaw<CheckRow[]>`
    select p.id as product_id, (${feature}::text is null or ${feature}::text = any(p.features)) as has_feature,
           s.id as subscription_id, s.status, s.end_date, s.live, s.seated
    from (select 1) one
    left join products p on p.slug = ${slug}
    left join lateral (
      select s.id, s.status::text as status, s.end_date, x.live, x.seated
      from subscriptions s
      cross join lateral (select
          s.status in ('active', 'trial') and (s.end_date is null or s.end_date > ${now}) as live,
          exists (select 1 from seat_assignments a where a.subscription_id = s.id and a.user_id = ${userId}) as seated) x
      where s.product_id = p.id and s.organization_id = ${organizationId}
      order by (x.live and x.seated) desc, x.live desc, x.seated desc, s.created_at desc
      limit 1) s on true`;
  return row!;
}

function decide(row: CheckRow): LicenseCode {
  if (!row.product_id) return 'UNKNOWN_PRODUCT';
  if (!row.has_feature) return 'FEATURE_MISSING';
  if (!row.subscription_id) return 'NO_SUBSCRIPTION';
  if (row.live) return row.seated ? (row.status === 'trial' ? 'TRIAL' : 'VALID') : 'NO_SEAT';
  return row.status === 'cancelled' ? 'CANCELLED' : 'EXPIRED';
}

export async function checkLicense(ctx: Context, input: unknown): Promise<LicenseCheck> {
  const userId = requireUserId(ctx);
  const { product, feature } = parseInput(checkInput, input);
  const row = await checkRow(ctx.db, userId, actingOrganizationId(ctx), product, feature, ctx.clock.now());
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
