// Cursor pagination over time-ordered ids (UUIDv7): `limit` at most 100, `cursor` is the last id seen. Lists run
// oldest first by default; `newestFirst` turns a list around (audit logs), with the cursor moving backwards.
import { z } from 'zod';
import { parseInput } from './input.ts';

export const MAX_PAGE = 100;
/** The ids lists page over (schema/lib/ids.ts), as written: lowercase hex. */
const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const pageInput = z.object({
  limit: z
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(MAX_PAGE, `must be at most ${MAX_PAGE}`)
    .nullish()
    .transform((v) => v ?? 50),
  // A cursor is an id from a previous page: anything else would be compared as text and answer a wrong page.
  cursor: z.string().regex(ID, 'must be the cursor of a previous page').nullish(),
});

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export type PageInput = { limit?: unknown; cursor?: unknown };

export interface PageOrder {
  newestFirst?: boolean;
}

function pageArgs(input: PageInput | undefined, { newestFirst = false }: PageOrder) {
  const { limit, cursor } = parseInput(pageInput, input ?? {});
  const direction = newestFirst ? ('desc' as const) : ('asc' as const);
  return {
    limit,
    query: {
      take: limit + 1,
      orderBy: { id: direction },
      ...(cursor ? { where: { id: newestFirst ? { lt: cursor } : { gt: cursor } } } : {}),
    },
  };
}

export function toPage<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? (items.at(-1)?.id ?? null) : null };
}

/** findMany arguments for one page of rows matching `where`. */
export function paged<W extends object>(input: PageInput | undefined, where: W, order: PageOrder = {}) {
  const { limit, query } = pageArgs(input, order);
  return {
    limit,
    args: { take: query.take, orderBy: query.orderBy, where: query.where ? { AND: [where, query.where] } : where },
  };
}
