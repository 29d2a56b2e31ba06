// Writes the printed SDL to schema.graphql and the types gql.tada reads from it (both committed; a test fails when
// either is stale).
import { writeFile } from 'node:fs/promises';
import { printSchema } from 'graphql';
import { schema } from '../schema/index.ts';
import { GRAPHQL_ENV, graphqlEnv } from './graphql-env.ts';

const sdl = `${printSchema(schema)}\n`;
await writeFile(new URL('../schema.graphql', import.meta.url), sdl);
await writeFile(GRAPHQL_ENV, graphqlEnv(sdl));
console.log('wrote schema.graphql and server/graphql/schema-env.d.ts');
