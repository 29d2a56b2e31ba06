// The mail log and development mailbox: platform admins read what was queued, its status, and (until it has gone
// out over SMTP, or always without SMTP) its bodies.
import { z } from 'zod';
import type { Context } from '../../context.ts';
import { NotFoundError } from '../../errors/index.ts';
import { requirePlatformAdmin } from '../../auth/access.ts';
import { fields, parseInput } from '../../lib/input.ts';
import { paged, toPage, type PageInput } from '../../lib/paging.ts';

const filterInput = z.object({ to: fields.email.optional() }).strict();

export async function listMails(ctx: Context, filter: { to?: string | null }, page?: PageInput) {
  await requirePlatformAdmin(ctx);
  const { to } = parseInput(filterInput, { to: filter.to ?? undefined });
  const { limit, args } = paged(page, to ? { toAddress: to } : {}, { newestFirst: true });
  return toPage(await ctx.db.mail.findMany(args), limit);
}

export async function getMail(ctx: Context, id: string) {
  await requirePlatformAdmin(ctx);
  const mail = await ctx.db.mail.findUnique({ where: { id } });
  if (!mail) throw new NotFoundError('Mail');
  return mail;
}
