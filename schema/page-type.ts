// The GraphQL shape of one page of a list: its items and the cursor of the next page (null on the last). Beside
// the builder it uses, not in lib/, which holds pure helpers.
import type { ObjectRef } from '@pothos/core';
import { builder, type BuilderTypes } from './builder.ts';
import type { Page } from './lib/paging.ts';

export function pageType<T>(name: string, item: ObjectRef<BuilderTypes, T>) {
  return builder.objectRef<Page<T>>(name).implement({
    fields: (t) => ({
      items: t.field({ type: [item], resolve: (p) => p.items as never }),
      nextCursor: t.exposeString('nextCursor', {
        nullable: true,
        description: 'Pass as `cursor` for the next page; null on the last.',
      }),
    }),
  });
}
