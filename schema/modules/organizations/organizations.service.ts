// Organizations: the operator organization (platform administrators) and customer tenants.
import { z } from 'zod';
import type { Context, Role } from '../../context.ts';
import {
  hasSecondFactor,
  isPlatformAdmin,
  organizationIdsOf,
  requireActor,
  requireFirstParty,
  requireOrgRole,
  requireUserId,
  roleIn,
} from '../../auth/access.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { emitEvent, emitEvents } from '../../events/emit.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { OrganizationNotFoundError } from './organizations.errors.ts';
import { ConflictError } from '../../errors/index.ts';
import { revokeGrants } from '../oauth/revocation.service.ts';

export interface OrganizationWithRole {
  id: string;
  name: string;
  isOperator: boolean;
  requireMfa: boolean;
  allowMetadataClients: boolean;
  createdAt: Date;
  updatedAt: Date;
  /** The caller's role there; null for a platform admin looking at a tenant it does not belong to. */
  role: Role | null;
}

async function withRole<T extends { id: string }>(ctx: Context, org: T): Promise<T & { role: Role | null }> {
  return { ...org, role: await roleIn(ctx, org.id) };
}

const createInput = z.object({ name: fields.name }).strict();

export async function createOrganization(ctx: Context, input: unknown) {
  const userId = requireUserId(ctx);
  const { name } = parseInput(createInput, input);
  const org = await ctx.db.$transaction(async (tx) => {
    const org = await tx.organization.create({ data: { name, memberships: { create: { userId, role: 'owner' } } } });
    const user = await tx.user.findUniqueOrThrow({
      where: { id: userId },
      select: { id: true, email: true, name: true },
    });
    const ref = { id: org.id, name: org.name };
    const at = { at: ctx.clock.now() };
    await emitEvent(tx, 'organization.created', ref, { organization: org }, at);
    await emitEvents(
      tx,
      ['member.added', 'organization.member.added'],
      ref,
      { organization: ref, user, role: 'owner' },
      at,
    );
    await recordAudit(
      ctx,
      { action: 'organization.create', organizationId: org.id, targetType: 'organization', targetId: org.id },
      tx,
    );
    return org;
  });
  return { ...org, role: 'owner' as Role };
}

const searchInput = z
  .object({ search: z.string().trim().max(200, 'must be at most 200 characters').nullish() })
  .strict();

/**
 * Every organization for platform admins, else the caller's own; with `search`, those whose name contains it,
 * whatever the case (an empty search matches all).
 */
export async function listOrganizations(ctx: Context, page?: PageInput, filter: { search?: unknown } = {}) {
  requireActor(ctx);
  const { search } = parseInput(searchInput, filter);
  const scope = (await isPlatformAdmin(ctx)) ? {} : { id: { in: await organizationIdsOf(ctx) } };
  // Prisma passes `contains` to ILIKE as it is: % and _ are escaped to mean themselves.
  const named = search ? { name: { contains: search.replace(/[\\%_]/g, '\\$&'), mode: 'insensitive' as const } } : {};
  const { limit, args } = paged(page, { ...scope, ...named });
  const result = toPage(await ctx.db.organization.findMany(args), limit);
  return { ...result, items: await Promise.all(result.items.map((o) => withRole(ctx, o))) };
}

/** The organizations the caller belongs to, with its role in each (GET /api/v1/orgs). */
export async function myOrganizations(ctx: Context) {
  const ids = await organizationIdsOf(ctx);
  const rows = await ctx.db.organization.findMany({ where: { id: { in: ids } }, orderBy: { createdAt: 'asc' } });
  return Promise.all(rows.map((o) => withRole(ctx, o)));
}

export async function getOrganization(ctx: Context, id: string) {
  await requireOrgRole(ctx, id, 'member');
  const org = await ctx.db.organization.findUnique({ where: { id } });
  if (!org) throw new OrganizationNotFoundError();
  return withRole(ctx, org);
}

const updateInput = z
  .object({
    name: fields.name.optional(),
    requireMfa: z.boolean().optional(),
    allowMetadataClients: z.boolean().optional(),
  })
  .strict();

/**
 * Only owners set require_mfa (docs/architecture.md#second-factors), and an owner without a second factor cannot
 * turn it on: they would shut themselves out of their own organization.
 */
async function allowMfaPolicyChange(ctx: Context, id: string, on: boolean): Promise<void> {
  // Whether a second factor is required is how the members sign in: never an app's to change.
  requireFirstParty(ctx, 'change whether the organization requires a second factor');
  await requireOrgRole(ctx, id, 'owner');
  if (!on) return;
  if (!(await hasSecondFactor(ctx, requireUserId(ctx)))) {
    throw new ConflictError('Set up a second factor for yourself before requiring one of every member');
  }
}

export async function updateOrganization(ctx: Context, id: string, input: unknown) {
  await requireOrgRole(ctx, id, 'admin');
  const data = parseInput(updateInput, input);
  if (data.requireMfa !== undefined) await allowMfaPolicyChange(ctx, id, data.requireMfa);
  // Which applications may sign members in is the organization's own choice, never an app's.
  if (data.allowMetadataClients !== undefined)
    requireFirstParty(ctx, 'change whether applications without a registration may sign members in');
  const org = await ctx.db.$transaction(async (tx) => {
    const org = await tx.organization.update({ where: { id }, data });
    // Forbidding them ends what they were granted here: their refresh tokens now, their codes and access tokens at
    // their next use (docs/architecture.md#apps-without-secrets).
    if (data.allowMetadataClients === false)
      await revokeGrants(ctx, tx, {
        client: { metadataDocument: true },
        OR: [{ refreshTokens: { some: { organizationId: id } } }, { codes: { some: { organizationId: id } } }],
      });
    await emitEvent(
      tx,
      'organization.updated',
      org,
      { organization: org, changes: Object.keys(data) },
      { at: ctx.clock.now() },
    );
    await recordAudit(
      ctx,
      {
        action: 'organization.update',
        organizationId: id,
        targetType: 'organization',
        targetId: id,
        details: { fields: Object.keys(data) },
      },
      tx,
    );
    return org;
  });
  return withRole(ctx, org);
}
