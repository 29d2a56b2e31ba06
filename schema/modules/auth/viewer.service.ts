import type { Context, Role } from '../../context.ts';
import { awaitsFactor, isPlatformAdmin } from '../../auth/access.ts';
import { myOrganizations } from '../organizations/organizations.service.ts';
import type { LoginResult } from './auth.service.ts';

export interface ViewerShape {
  user: { id: string; email: string; name: string };
  organization: { id: string; name: string; role: Role | null } | null;
  organizations: { id: string; name: string; role: Role | null }[];
  platformAdmin: boolean;
  /** The current organization holds the session back until its person sets up a second factor. */
  mfaEnrollmentRequired: boolean;
  session: LoginResult['session'] | null;
}

/** Who is calling, for the portals and GET /api/v1/auth/session; null when nobody is signed in. */
export async function viewer(ctx: Context): Promise<ViewerShape | null> {
  const actor = ctx.actor;
  if (!actor || actor.kind === 'apiKey' || !actor.userId) return null;
  const user = await ctx.db.user.findUniqueOrThrow({
    where: { id: actor.userId },
    select: { id: true, email: true, name: true },
  });
  const organizations = await myOrganizations(ctx);
  const session =
    actor.kind === 'user' ? await ctx.db.session.findUniqueOrThrow({ where: { id: actor.sessionId } }) : null;
  return {
    user,
    organizations,
    organization: organizations.find((o) => o.id === actor.organizationId) ?? null,
    platformAdmin: await isPlatformAdmin(ctx),
    mfaEnrollmentRequired: await awaitsFactor(ctx),
    session,
  };
}
