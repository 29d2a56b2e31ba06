// The types gql.tada reads the schema from (server/graphql/schema-env.d.ts), made from the committed schema.graphql:
// the portal's operations and the REST route tables are type-checked against them. `npm run schema:print` writes
// both files; a test fails when this one is stale.
import { buildSchema, introspectionFromSchema } from 'graphql';
import { minifyIntrospection, outputIntrospectionFile } from 'gql.tada/internal';

export const GRAPHQL_ENV = new URL('../server/graphql/schema-env.d.ts', import.meta.url);

/** The introspection file for `sdl`, as `gql-tada generate output` writes it. */
export function graphqlEnv(sdl: string): string {
  const introspection = introspectionFromSchema(buildSchema(sdl));
  return outputIntrospectionFile(minifyIntrospection({ ...introspection, name: undefined }), {
    fileType: '.d.ts',
    shouldPreprocess: true,
  });
}
