// The user's claims by granted scope, for the ID token and the userinfo endpoint. The interface shows two
// shapes for organization fields (organizationId and organization_id); both are given.
import type { Context } from '../../context.ts';

export async function userClaims(ctx: Context, userId: string, organizationId: string, scope: string[]): Promise<Record<string, unknown>> {
  const granted = new Set(scope);
  const user = await ctx.db.user.findUnique({
    where: { id: userId },
    select: {
      id: true, email: true, emailVerified: true, name: true, picture: true, updatedAt: true,
      memberships: { where: { organizationId }, select: { role: true, organization: { select: { id: true, name: true } } } },
    },
  });
  if (!user) return { sub: userId };
  const claims: Record<string, unknown> = { sub: user.id };
  if (granted.has('email')) Object.assign(claims, { email: user.email, email_verified: user.emailVerified });
  if (granted.has('profile')) {
    Object.assign(claims, { name: user.name, updated_at: Math.floor(user.updatedAt.getTime() / 1000) });
    if (user.picture) claims.picture = user.picture;
  }
  const membership = granted.has('organization') ? user.memberships[0] : undefined;
  if (membership) {
    Object.assign(claims, {
      organization_id: membership.organization.id,
      organizationId: membership.organization.id,
      organization_name: membership.organization.name,
      role: membership.role,
    });
  }
  return claims;
}
