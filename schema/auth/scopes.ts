// The scope initializer of the auth plugin: each scope defers to auth/access.ts, the single source of truth.
import { AuthScopeFailureType, type AuthFailure } from '@pothos/plugin-scope-auth';
import type { Context, Role } from '../context.ts';
import { isPlatformAdmin, requireOrgRole, tokenAllows } from './access.ts';

/**
 * What an OAuth access token may do (docs/architecture.md#authorization). `api` lets it act as its user everywhere; it is the type-level
 * scope of Query and Mutation (builder.ts), so every field needs it unless it opts out with `skipTypeScopes`.
 * The caller's own profile, organizations and session are open to any of PROFILE_SCOPES (`profileRead`); the
 * caller's own licenses and entitlements to any valid token (ANY_TOKEN).
 */
export const API_SCOPE = 'api';
export const PROFILE_SCOPES = ['openid', 'profile', 'email', API_SCOPE] as const;

/** Field options for what any valid token may read: the caller's own licenses and entitlements. */
export const ANY_TOKEN = { skipTypeScopes: true, authScopes: { authenticated: true } } as const;

/**
 * The gate of what only a first-party caller does (docs/architecture.md#authorization): no OAuth access token, and
 * `map` (any credential by default). `firstParty` is checked first, so an app's token is refused as such whatever
 * the arguments name. The service still calls requireFirstParty where the rule depends on the input.
 */
export const firstParty = <M extends object = { authenticated: true }>(map: M = { authenticated: true } as M) => ({
  $all: { firstParty: true as const, ...map },
});

export function scopeInitializer(ctx: Context) {
  const actor = ctx.actor;
  return {
    authenticated: !!actor,
    person: !!actor && actor.kind !== 'apiKey' && !!actor.userId,
    session: actor?.kind === 'user',
    firstParty: actor?.kind !== 'oauth',
    /** Tessera's own command line, signed in as a person (clients/cli-client.ts): first-party, though a token. */
    commandLine: actor?.kind === 'oauth' && !!actor.platformWide && !!actor.userId,
    tokenScope: (scope: string) => tokenAllows(actor, [scope]),
    profileRead: tokenAllows(actor, PROFILE_SCOPES),
    platformAdmin: () => isPlatformAdmin(ctx),
    orgRole: async ({ organizationId, role }: { organizationId: string; role: Role }) => {
      await requireOrgRole(ctx, organizationId, role);
      return true;
    },
  };
}

/**
 * The first failed scope in a check's tree (a `$all` or `$any` holds more) that `pick` names, else null: what a
 * refusal says comes from the scope that refused it (builder.ts).
 */
function firstFailed<T>(failure: AuthFailure, pick: (scope: string, parameter: unknown) => T | null): T | null {
  switch (failure.kind) {
    case AuthScopeFailureType.AuthScope:
      return pick(failure.scope, failure.parameter);
    case AuthScopeFailureType.AnyAuthScopes:
    case AuthScopeFailureType.AllAuthScopes:
      for (const inner of failure.failures) {
        const found = firstFailed(inner, pick);
        if (found !== null) return found;
      }
      return null;
    default:
      return null;
  }
}

/** Which first-party scope (`session` or `firstParty`) a failed check was refused by, else null. */
export const failedFirstParty = (failure: AuthFailure) =>
  firstFailed(failure, (scope) => (scope === 'session' || scope === 'firstParty' ? scope : null));

/** The OAuth scope a failed check was missing when a token-scope check failed it, else null (role or kind). */
export const missingTokenScope = (failure: AuthFailure) =>
  firstFailed(failure, (scope, parameter) =>
    scope === 'tokenScope' ? String(parameter) : scope === 'profileRead' ? PROFILE_SCOPES[0] : null,
  );
