// The product catalog. Platform admins write it; every signed-in caller reads it. A product's slug is also its
// OAuth scope (docs/architecture.md#oauth-and-openid-connect), so it follows the scope syntax and never shadows a
// standard scope.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { NotFoundError } from '../../errors/index.ts';
import { requireActor, requirePlatformAdmin } from '../../auth/access.ts';
import { isUniqueViolation } from '../../db.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';
import { recordAudit } from '../audit/audit.service.ts';
import { STANDARD_SCOPES } from '../oauth/scopes.ts';
import { CatalogWriterOnlyError, ProductInUseError, SlugTakenError } from './products.errors.ts';

const slug = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9-]{0,62}$/,
    'must be 1 to 63 lowercase letters, digits and hyphens, starting with a letter or digit',
  )
  .refine((s) => !(s in STANDARD_SCOPES), 'is reserved (a standard OAuth scope)');
const features = z
  .array(z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'), {
    message: 'must be a list of strings',
  })
  .max(100, 'must have at most 100 features')
  .transform((list) => [...new Set(list)]);
const description = z.string().max(2000, 'must be at most 2000 characters');

const createInput = z
  .object({ name: fields.name, slug, description: description.default(''), features: features.default([]) })
  .strict();
const updateInput = z.object({ name: fields.name, slug, description, features }).partial().strict();

const requireCatalogWriter = (ctx: Context) => requirePlatformAdmin(ctx, CatalogWriterOnlyError);

export async function listProducts(ctx: Context, page?: PageInput) {
  requireActor(ctx);
  const { limit, args } = paged(page, {});
  return toPage(await ctx.db.product.findMany(args), limit);
}

export async function getProductBySlug(ctx: Context, productSlug: string) {
  requireActor(ctx);
  const product = productSlug.length <= 63 ? await ctx.db.product.findUnique({ where: { slug: productSlug } }) : null;
  if (!product) throw new NotFoundError('Product');
  return product;
}

export async function createProduct(ctx: Context, input: unknown) {
  const organizationId = await requireCatalogWriter(ctx);
  const data = parseInput(createInput, input);
  try {
    return await ctx.db.$transaction(async (tx) => {
      const product = await tx.product.create({ data });
      await recordAudit(
        ctx,
        {
          action: 'product.create',
          organizationId,
          targetType: 'product',
          targetId: product.id,
          details: { slug: product.slug },
        },
        tx,
      );
      return product;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new SlugTakenError(data.slug);
    throw error;
  }
}

export async function updateProduct(ctx: Context, id: string, input: unknown) {
  const organizationId = await requireCatalogWriter(ctx);
  const data = parseInput(updateInput, input);
  try {
    return await ctx.db.$transaction(async (tx) => {
      const found = await tx.product.findUnique({ where: { id }, select: { id: true } });
      if (!found) throw new NotFoundError('Product');
      const product = await tx.product.update({ where: { id }, data });
      await recordAudit(
        ctx,
        {
          action: 'product.update',
          organizationId,
          targetType: 'product',
          targetId: id,
          details: { fields: Object.keys(data) },
        },
        tx,
      );
      return product;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new SlugTakenError(data.slug ?? '');
    throw error;
  }
}

/** A product still referred to by a subscription (of any status) stays: the foreign key refuses, we say why. */
export async function deleteProduct(ctx: Context, id: string) {
  const organizationId = await requireCatalogWriter(ctx);
  try {
    return await ctx.db.$transaction(async (tx) => {
      const product = await tx.product.findUnique({ where: { id }, select: { id: true, slug: true } });
      if (!product) throw new NotFoundError('Product');
      await tx.product.delete({ where: { id } });
      await recordAudit(
        ctx,
        {
          action: 'product.delete',
          organizationId,
          targetType: 'product',
          targetId: id,
          details: { slug: product.slug },
        },
        tx,
      );
      return true;
    });
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 'P2003') throw new ProductInUseError();
    throw error;
  }
}
