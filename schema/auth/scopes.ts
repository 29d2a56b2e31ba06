// The scope initializer of the auth plugin: each scope defers to auth/access.ts, the single source of truth.
import type { Context, Role } from '../context.ts';
import { isPlatformAdmin, requireOrgRole } from './access.ts';

export function scopeInitializer(ctx: Context) {
  const actor = ctx.actor;
  return {
    authenticated: !!actor,
    person: !!actor && actor.kind !== 'apiKey' && !!actor.userId,
    session: actor?.kind === 'user',
    platformAdmin: () => isPlatformAdmin(ctx),
    orgRole: async ({ organizationId, role }: { organizationId: string; role: Role }) => {
      await requireOrgRole(ctx, organizationId, role);
      return true;
    },
  };
}
