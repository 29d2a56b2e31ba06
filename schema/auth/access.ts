// The one place that answers "what may this caller do in this organization". Scopes (scopes.ts) and services
// both ask here. A caller with no role in an organization is told it does not exist (404, not 403).
import type { Actor, Context, Role } from '../context.ts';
import { Prisma } from '../db.ts';
import {
  ForbiddenError,
  InsufficientScopeError,
  NotFoundError,
  UnauthenticatedError,
  ValidationError,
} from '../errors/index.ts';
import { FirstPartyOnlyError, MfaEnrollmentRequiredError } from './access.errors.ts';
import { roleAtLeast } from './roles.ts';
import { expected } from '../lib/expected.ts';

interface Memberships {
  roles: Map<string, Role>;
  operatorId: string | null;
  /**
   * Organizations that require a second factor of a session's person who has none: everything there is refused
   * until one is set up (docs/architecture.md#second-factors). Tokens and API keys are not held back, but for the
   * command line's token whose sign-in used no second factor (cli-client.ts).
   */
  awaitingFactor: Set<string>;
}

async function memberships(ctx: Context): Promise<Memberships> {
  const cached = ctx.cache.get('memberships') as Promise<Memberships> | undefined;
  if (cached) return cached;
  const load = (async (): Promise<Memberships> => {
    const actor = ctx.actor;
    const roles = new Map<string, Role>();
    const awaitingFactor = new Set<string>();
    if (!actor) return { roles, operatorId: await ctx.operatorOrganizationId(), awaitingFactor };
    if (actor.kind === 'apiKey') {
      roles.set(actor.organizationId, actor.role);
    } else if (actor.userId) {
      const rows = await ctx.db.membership.findMany({
        where: {
          userId: actor.userId,
          // A token acts only within its client's organization; the command line's, in each of the person's.
          ...(actor.kind === 'oauth' && !actor.platformWide ? { organizationId: actor.organizationId } : {}),
        },
        select: { organizationId: true, role: true, organization: { select: { requireMfa: true } } },
      });
      for (const r of rows) roles.set(r.organizationId, r.role);
      const requiring = rows.filter((r) => r.organization.requireMfa).map((r) => r.organizationId);
      if (actor.kind === 'user' && requiring.length && !(await hasSecondFactor(ctx, actor.userId)))
        for (const id of requiring) awaitingFactor.add(id);
      // The command line's token, whose sign-in used no second factor, is held back where one is required.
      if (actor.kind === 'oauth' && actor.platformWide && !actor.amr?.includes('mfa'))
        for (const id of requiring) awaitingFactor.add(id);
    }
    return { roles, operatorId: await ctx.operatorOrganizationId(), awaitingFactor };
  })();
  ctx.cache.set('memberships', load);
  return load;
}

export async function roleIn(ctx: Context, organizationId: string): Promise<Role | null> {
  return (await memberships(ctx)).roles.get(organizationId) ?? null;
}

/** Owners and admins of the operator organization administer the whole platform. */
const administersPlatform = ({ roles, operatorId }: Memberships) =>
  !!operatorId && roleAtLeast(roles.get(operatorId), 'admin');

export async function isPlatformAdmin(ctx: Context): Promise<boolean> {
  const m = await memberships(ctx);
  // The operator organization's powers are held back, like its own routes, until a second factor is set up.
  return administersPlatform(m) && !!m.operatorId && !m.awaitingFactor.has(m.operatorId);
}

/**
 * Passes for a platform administrator (docs/architecture.md#tenancy-and-roles) and returns the operator
 * organization's id. Anyone else is refused with `Refusal`, the domain's words for what only they may do.
 */
export async function requirePlatformAdmin(
  ctx: Context,
  Refusal: new () => ForbiddenError = ForbiddenError,
): Promise<string> {
  requireActor(ctx);
  const m = await memberships(ctx);
  if (!administersPlatform(m) || !m.operatorId) throw new Refusal();
  if (m.awaitingFactor.has(m.operatorId)) throw new MfaEnrollmentRequiredError();
  return m.operatorId;
}

export async function organizationIdsOf(ctx: Context): Promise<string[]> {
  return [...(await memberships(ctx)).roles.keys()];
}

/** The caller's organizations whose data it may read: all but those holding it back until it sets up a second factor. */
export async function readableOrganizationIdsOf(ctx: Context): Promise<string[]> {
  const m = await memberships(ctx);
  return [...m.roles.keys()].filter((id) => !m.awaitingFactor.has(id));
}

/** SQL, whether the person `userId` has a second factor: a confirmed authenticator app or a passkey. */
export const hasFactorSql = (
  userId: Prisma.Sql,
) => Prisma.sql`(exists (select 1 from totp_factors where user_id = ${userId} and confirmed_at is not null)
        or exists (select 1 from passkeys where user_id = ${userId}))`;

/**
 * SQL, whether `organizationId` holds the person `userId` back until they set up a second factor (awaitingFactor),
 * for a statement that answers a session in one go (the licence check).
 */
export const awaitingFactorSql = (userId: Prisma.Sql, organizationId: Prisma.Sql) =>
  Prisma.sql`(exists (select 1 from organizations o where o.id = ${organizationId} and o.require_mfa) and not ${hasFactorSql(userId)})`;

/** Whether the person has a second factor: a confirmed authenticator app or a passkey. One statement. */
export async function hasSecondFactor(ctx: Pick<Context, 'db'>, userId: string): Promise<boolean> {
  const [row] = await ctx.db.$queryRaw<{ has: boolean }[]>`select ${hasFactorSql(Prisma.sql`${userId}::text`)} as has`;
  return expected(row, 'the second-factor row').has;
}

/**
 * Whether the session's current organization holds its person back until they set up a second factor
 * (awaitingFactor): for what a service reads there without asking requireOrgRole (the viewer's flag, the caller's
 * own licences). Tokens and API keys are not held back.
 */
export async function awaitsFactor(ctx: Context): Promise<boolean> {
  const organizationId = actingOrganizationId(ctx);
  return ctx.actor?.kind === 'user' && !!organizationId && (await memberships(ctx)).awaitingFactor.has(organizationId);
}

/** Forget the memo after a change to the caller's own memberships within one request. */
export function forgetMemberships(ctx: Context): void {
  ctx.cache.delete('memberships');
}

/**
 * Passes when the caller holds at least `min` in the organization (platform admins hold owner everywhere).
 * No role at all: NotFoundError; a lower role: ForbiddenError.
 */
export async function requireOrgRole(
  ctx: Context,
  organizationId: string,
  min: Role,
  what = 'Organization',
): Promise<Role> {
  if (!ctx.actor) throw new UnauthenticatedError();
  const m = await memberships(ctx);
  // A platform admin's powers come from the operator organization, held back like any other.
  if (
    m.awaitingFactor.has(organizationId) ||
    (m.operatorId && m.awaitingFactor.has(m.operatorId) && administersPlatform(m))
  ) {
    throw new MfaEnrollmentRequiredError();
  }
  const role = await roleIn(ctx, organizationId);
  if (await isPlatformAdmin(ctx)) {
    // Platform admins act as owners everywhere, but only where there is an organization.
    if (!role && !(await ctx.db.organization.findUnique({ where: { id: organizationId }, select: { id: true } })))
      throw new NotFoundError(what);
    return 'owner';
  }
  if (!role) throw new NotFoundError(what);
  if (!roleAtLeast(role, min)) throw new ForbiddenError();
  return role;
}

/**
 * Passes for an owner of the organization (platform admins act as owners everywhere); an admin or member is refused
 * with `Refusal`, the domain's words for what only owners do. With no role at all the organization does not exist.
 */
export async function requireOwner(
  ctx: Context,
  organizationId: string,
  Refusal: new () => ForbiddenError,
  what = 'Organization',
): Promise<void> {
  if ((await requireOrgRole(ctx, organizationId, 'admin', what)) !== 'owner') throw new Refusal();
}

export function requireActor(ctx: Context) {
  if (!ctx.actor) throw new UnauthenticatedError();
  return ctx.actor;
}

/**
 * Refuses an OAuth access token: what outlives the token (a session, an API key, a client secret, an invitation's
 * link) and what changes how the person signs in is done only by a first-party caller, a session or an API key.
 * Otherwise an app holding an `api` token could turn it into a credential that survives the token's expiry, its
 * revocation and its client's deletion. For a rule that depends on the input (updateMe with a password): what is
 * first-party whatever the input declares `firstParty()` or `session` on its field (scopes.ts), and asks nothing here.
 */
export function requireFirstParty(ctx: Context, what: string): void {
  if (ctx.actor?.kind === 'oauth') throw new FirstPartyOnlyError(what);
}

/** Sessions and API keys are not limited by OAuth scopes; an access token holds one of `scopes` or is refused. */
export const tokenAllows = (actor: Actor | null, scopes: readonly string[]) =>
  actor?.kind !== 'oauth' || scopes.some((s) => actor.scope.includes(s));

/**
 * The type-level `tokenScope` of Query and Mutation (scopes.ts), for a road that calls a service without GraphQL
 * (server/sso's start): an access token without `scope` acts there no more than over the API.
 */
export function requireTokenScope(ctx: Context, scope: string): void {
  if (!tokenAllows(ctx.actor, [scope])) throw new InsufficientScopeError(scope);
}

/** The person behind a session, for what only they do themselves: an access token and an API key are refused. */
export function requireSessionUser(ctx: Context, what: string): string {
  if (ctx.actor?.kind === 'oauth') throw new FirstPartyOnlyError(what, 'sign in');
  return requireUserId(ctx);
}

/** The signed-in human behind the request (a session or an OAuth token with a user). */
export function requireUserId(ctx: Context): string {
  return userIdOf(requireActor(ctx));
}

/** The human behind `actor`, or 403: an API key or a machine client's token acts for no one. */
export function userIdOf(actor: Actor): string {
  if (actor.kind === 'apiKey' || !actor.userId) throw new ForbiddenError('This operation needs a signed-in user');
  return actor.userId;
}

/** The organization a call is about: the one it names, else the one it acts in. */
export function organizationInScope(ctx: Context, organizationId?: string | null): string {
  const id = organizationId ?? actingOrganizationId(ctx);
  if (!id) throw new ValidationError('No organization selected', [{ path: 'organizationId', message: 'is required' }]);
  return id;
}

/** The organization a request acts in by default: the session's current one, the key's or the token's. */
export function actingOrganizationId(ctx: Context): string | null {
  const actor = ctx.actor;
  if (!actor) return null;
  return actor.organizationId;
}
