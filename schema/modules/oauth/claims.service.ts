// The user's claims by granted scope, for the ID token and the userinfo endpoint. The interface shows two
// shapes for organization fields (organizationId and organization_id); both are given. The hot paths read the
// fields below in the statement they already make (token issue, access-token check), so claims cost no query.
// products, licenses and entitlements follow the rule of product-scopes.ts revealsLicenses: the `organization`
// scope shows all of the user's licenses in the client's organization, a product scope shows its own.
import { productClaims, revealsLicenses, type ProductClaim } from './product-scopes.ts';

/** What the claims are made of: the user's row and, when still a member, the organization and role. */
export interface ClaimSource {
  user_id: string;
  email: string | null;
  email_verified: boolean | null;
  name: string | null;
  picture: string | null;
  updated_at: Date | null;
  organization_id: string;
  organization_name: string | null;
  /** Null when the user is not a member of the organization (then no organization claims). */
  role: string | null;
  /** The licensed products the token's scope reveals (product-scopes.ts revealedProducts). */
  products: ProductClaim[] | null;
}

/** The SQL columns of a ClaimSource, for a query joining users `u`, memberships `m` and organizations `o`. */
export const CLAIM_COLUMNS = `u.email, u.email_verified, u.name, u.picture, u.updated_at, o.name as organization_name, m.role::text as role`;

export function claimsFor(source: ClaimSource, scope: string[]): Record<string, unknown> {
  const granted = new Set(scope);
  const claims: Record<string, unknown> = { sub: source.user_id };
  if (source.email === null) return claims; // the user is gone
  if (granted.has('email')) Object.assign(claims, { email: source.email, email_verified: source.email_verified });
  if (granted.has('profile')) {
    Object.assign(claims, {
      name: source.name,
      updated_at: source.updated_at && Math.floor(source.updated_at.getTime() / 1000),
    });
    if (source.picture) claims.picture = source.picture;
  }
  if (granted.has('organization') && source.role) {
    Object.assign(claims, {
      organization_id: source.organization_id,
      organizationId: source.organization_id,
      organization_name: source.organization_name,
      role: source.role,
    });
  }
  if (source.role && revealsLicenses(scope)) Object.assign(claims, productClaims(source.products ?? []));
  return claims;
}
