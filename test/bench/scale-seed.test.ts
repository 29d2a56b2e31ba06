// `npm run bench:scale` seeds by SQL alone, with foreign keys and triggers not fired and indexes dropped and made
// again: here at a small scale, that what it makes is what the service would have, and that the service works on it.
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { hashPassword } from '../../schema/lib/crypto.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { BIG_OWNER_EMAIL, memberEmail, SCALE_PASSWORD, scaleShape, seedScale } from './scale-seed.ts';

const shape = scaleShape(2_000);
let server: TestServer;
let db: pg.Client;
let indexesBefore: string[];
const log: string[] = [];

const indexes = async () =>
  (
    await db.query<{ definition: string }>(
      `select indexdef as definition from pg_indexes where schemaname = 'public' order by indexname`,
    )
  ).rows.map((r) => r.definition);

beforeAll(async () => {
  server = await startTestServer();
  db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
  indexesBefore = await indexes();
  await seedScale(db, shape, await hashPassword(SCALE_PASSWORD), (line) => log.push(line));
});

afterAll(async () => {
  await db?.end();
  await server?.stop();
});

it('makes the rows of its shape, one line of progress a table, and leaves every index as the migrations made it', async () => {
  const count = async (table: string) =>
    (await db.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;
  // The test server's bootstrap made one organization and its admin before the seed.
  expect(await count('users')).toBe(shape.users + 1 + 1);
  expect(await count('refresh_tokens')).toBe(shape.refreshTokens);
  expect(await count('audit_logs')).toBeGreaterThanOrEqual(shape.auditEntries);
  expect(await count('webhook_deliveries')).toBe(shape.events);
  expect(await count('scim_group_members')).toBe(shape.groupMembers);
  expect(log).toHaveLength(15);
  expect(await indexes()).toEqual(indexesBefore);
});

it('makes every reference valid, though no foreign key was checked as it wrote', async () => {
  const { rows: keys } = await db.query<{
    name: string;
    child: string;
    parent: string;
    columns: string[];
    refs: string[];
  }>(
    `select c.conname as name, c.conrelid::regclass::text as child, c.confrelid::regclass::text as parent,
            array(select attname from unnest(c.conkey) with ordinality k(n, i) join pg_attribute a
                  on a.attrelid = c.conrelid and a.attnum = k.n order by i)::text[] as columns,
            array(select attname from unnest(c.confkey) with ordinality k(n, i) join pg_attribute a
                  on a.attrelid = c.confrelid and a.attnum = k.n order by i)::text[] as refs
     from pg_constraint c where c.contype = 'f' and c.connamespace = 'public'::regnamespace`,
  );
  expect(keys.length).toBeGreaterThan(20);
  const orphans: string[] = [];
  for (const k of keys) {
    const matches = k.columns.map((c, i) => `p."${k.refs[i]}" = r."${c}"`).join(' and ');
    const present = k.columns.map((c) => `r."${c}" is not null`).join(' and ');
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from ${k.child} r where ${present} and not exists (select 1 from ${k.parent} p where ${matches})`,
    );
    if (rows[0]!.n) orphans.push(`${k.name}: ${rows[0]!.n}`);
  }
  expect(orphans).toEqual([]);
});

it('gives the service data it works with: a member signs in, the large organization lists its members, SCIM finds one', async () => {
  const post = (path: string, body: unknown, token?: string) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
  const member = await post('/api/v1/auth/login', {
    email: memberEmail(17, shape.organizations),
    password: SCALE_PASSWORD,
  });
  expect(member.status).toBe(200);
  const owner = (await (
    await post('/api/v1/auth/login', { email: BIG_OWNER_EMAIL, password: SCALE_PASSWORD })
  ).json()) as {
    token: string;
    organization: { id: string };
  };
  const members = (await (
    await fetch(`${server.url}/v1/organizations/${owner.organization.id}/members?limit=100`, {
      headers: { authorization: `Bearer ${owner.token}` },
    })
  ).json()) as { members: unknown[]; next_cursor: string | null };
  expect(members.members).toHaveLength(100);
  expect(members.next_cursor).not.toBeNull();
  const scim = (await (await post('/api/v1/scim-tokens', { name: 'seed' }, owner.token)).json()) as { token: string };
  const found = (await (
    await fetch(
      `${server.url}/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${memberEmail(3, shape.organizations)}"`)}`,
      { headers: { authorization: `Bearer ${scim.token}` } },
    )
  ).json()) as { totalResults: number; Resources: { userName: string }[] };
  expect(found.totalResults).toBe(1);
  expect(found.Resources[0]!.userName).toBe(memberEmail(3, shape.organizations));
});
