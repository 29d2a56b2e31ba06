import { readFile } from 'node:fs/promises';
import { printSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { schema } from '../../schema/index.ts';

describe('schema.graphql', () => {
  it('is the printed SDL of the current schema (run `npm run schema:print` after changing the schema)', async () => {
    const committed = await readFile(new URL('../../schema.graphql', import.meta.url), 'utf8');
    expect(committed).toBe(`${printSchema(schema)}\n`);
  });
});
