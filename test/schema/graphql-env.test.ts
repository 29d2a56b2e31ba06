import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { GRAPHQL_ENV, graphqlEnv } from '../../scripts/graphql-env.ts';

describe('server/graphql/schema-env.d.ts', () => {
  it('holds the types of the committed schema.graphql (run `npm run schema:print` after changing the schema)', async () => {
    const sdl = await readFile(new URL('../../schema.graphql', import.meta.url), 'utf8');
    expect(await readFile(GRAPHQL_ENV, 'utf8')).toBe(graphqlEnv(sdl));
  });
});
