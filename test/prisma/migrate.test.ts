import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { migrate, listMigrations } from '../../prisma/migrate.ts';
import { createTestDatabase } from '../helpers/db.ts';

describe('migrations', () => {
  it('are applied once even when several processes start at the same time', async () => {
    const db = await createTestDatabase();
    try {
      // The template is migrated already: start from an empty schema to apply everything again.
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      await c.query('drop schema public cascade; create schema public');
      await c.end();
      const results = await Promise.all([migrate(db.url), migrate(db.url), migrate(db.url)]);
      const all = (await listMigrations()).map((m) => m.name);
      expect(results.flat().sort()).toEqual(all.sort());
      const check = new pg.Client({ connectionString: db.url });
      await check.connect();
      const rows = await check.query(
        'select migration_name, checksum from "_prisma_migrations" order by migration_name',
      );
      await check.end();
      expect(rows.rows.map((r) => r.migration_name)).toEqual(all);
      expect(await migrate(db.url)).toEqual([]);
    } finally {
      await db.drop();
    }
  });
});
