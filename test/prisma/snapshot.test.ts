// `npm run db:diff` writes a migration as the difference between prisma/schema.prisma and the schema saved with the
// last migration. A change to schema.prisma with a migration written by hand, but no new snapshot, leaves the next
// db:diff writing that change again (it once re-created the marketplace's tables): the two files must agree.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';

const prisma = path.resolve(import.meta.dirname, '../../prisma');

it('the schema saved with the last migration is prisma/schema.prisma', async () => {
  const [schema, snapshot] = await Promise.all([
    readFile(path.join(prisma, 'schema.prisma'), 'utf8'),
    readFile(path.join(prisma, 'migrations', 'schema.snapshot.prisma'), 'utf8'),
  ]);
  expect(
    snapshot,
    'run `npm run db:diff -- <name>`, or save schema.prisma as the snapshot with the migration you wrote',
  ).toBe(schema);
});
