// Writes the printed SDL to schema.graphql (committed; a test fails when it is stale).
import { writeFile } from 'node:fs/promises';
import { printSchema } from 'graphql';
import { schema } from '../schema/index.ts';

await writeFile(new URL('../schema.graphql', import.meta.url), `${printSchema(schema)}\n`);
console.log('wrote schema.graphql');
