// Product scopes (docs/architecture.md#subscriptions-seats-and-licenses): a product's slug is a scope, granted only
// to a user who holds that license in the client's organization: a seat on an active or trial subscription not past
// its end_date (the rule of licenses.service.ts). That service reads licenses in a query of its own; the OAuth hot paths need the rule
// inside the one statement they already make, so it is written here as SQL fragments over a product `p`.
import { Prisma } from '../../db.ts';
import { STANDARD_SCOPES } from './scopes.ts';

const sql = Prisma.sql;
const STANDARD = Object.keys(STANDARD_SCOPES);

/** The scopes of `scope` that are not standard ones: product slugs. */
export const productScopesOf = (scope: string[]): string[] => scope.filter((s) => !(s in STANDARD_SCOPES));

/** SQL: product `p` is licensed to `userId` in `organizationId` at `now` (expressions or constants). */
export function licensed(userId: Prisma.Sql, organizationId: Prisma.Sql, now: Date): Prisma.Sql {
  return sql`exists (
    select 1 from seat_assignments lic_a join subscriptions lic_s on lic_s.id = lic_a.subscription_id
    where lic_a.user_id = ${userId} and lic_a.organization_id = ${organizationId} and lic_s.product_id = p.id
      and lic_s.status in ('active', 'trial') and (lic_s.end_date is null or lic_s.end_date > ${now}::timestamp(3)))`;
}

/**
 * SQL: the space-separated `scope` (an expression) without the product scopes the user no longer holds, order
 * kept. Standard scopes always stay: the statement around it checks the grant, the session and the membership.
 */
export function withoutLostLicenses(
  scope: Prisma.Sql,
  userId: Prisma.Sql,
  organizationId: Prisma.Sql,
  now: Date,
): Prisma.Sql {
  return sql`array_to_string(array(
    select x from unnest(string_to_array(${scope}, ' ')) with ordinality as t(x, n)
    where x = any(${STANDARD}::text[]) or exists (select 1 from products p where p.slug = x and ${licensed(userId, organizationId, now)})
    order by n), ' ')`;
}

/**
 * Which licenses a token reveals (userinfo, ID token): with the `organization` scope all of the user's licenses
 * in the organization (they describe the user's place in it, like the role); otherwise those of the product
 * scopes granted. A token with neither reveals none, and the claims are left out.
 */
export function revealsLicenses(scope: string[]): { all: boolean; slugs: string[] } | null {
  const slugs = productScopesOf(scope);
  if (scope.includes('organization')) return { all: true, slugs };
  return slugs.length ? { all: false, slugs } : null;
}

/** The shape of userinfo's `products`. */
export interface ProductClaim {
  id: string;
  slug: string;
  name: string;
  features: string[];
}

/**
 * SQL: the jsonb array of the products `reveal` shows that the user holds (ProductClaim, by slug), or null when
 * nothing is revealed (then the claims are left out). `reveal` may be an SQL pair computed in the statement.
 */
export function revealedProducts(
  reveal: { all: Prisma.Sql; slugs: Prisma.Sql } | null,
  userId: Prisma.Sql,
  organizationId: Prisma.Sql,
  now: Date,
): Prisma.Sql {
  if (reveal === null) return sql`null::jsonb`;
  return sql`(select coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'slug', p.slug, 'name', p.name, 'features', p.features) order by p.slug), '[]'::jsonb)
    from products p where (${reveal.all} or p.slug = any(${reveal.slugs})) and ${licensed(userId, organizationId, now)})`;
}

/** The claims of the products shown: products, licenses (slugs) and entitlements ("slug:feature"). */
export function productClaims(products: ProductClaim[] | null): Record<string, unknown> {
  if (!products) return {};
  return {
    products,
    licenses: products.map((p) => p.slug),
    entitlements: products.flatMap((p) => p.features.map((f) => `${p.slug}:${f}`)),
  };
}
