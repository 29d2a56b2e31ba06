// GraphQL documents typed from the committed schema.graphql (gql.tada over server/graphql/schema-env.d.ts): the
// REST route tables and the portal write their operations with `graphql()`, and read their data as `ResultOf`, so
// that a selection and the code that reads it cannot drift apart. Fragments are not masked: a spread's fields are
// plain fields of the result.
import { initGraphQLTada } from 'gql.tada';
import type { introspection } from './schema-env.d.ts';

export const graphql = initGraphQLTada<{
  introspection: introspection;
  disableMasking: true;
  // As the in-process executor returns them (schema/builder.ts): timestamps serialized as RFC 3339 strings.
  scalars: { DateTime: string; JSON: unknown };
}>();

export type { FragmentOf, ResultOf, TadaDocumentNode, VariablesOf } from 'gql.tada';
