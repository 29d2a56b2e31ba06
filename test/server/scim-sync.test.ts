// A directory's first sync (docs/architecture.md#directory-provisioning): 1,000 people provisioned as Entra ID does it,
// each looked up by userName first and then created, four requests at a time, under the token's default rate limit.
// Every request succeeds and the directory then lists exactly those people. The time it took is printed (for the
// record, not asserted: speed belongs in benchmarks).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { createTenant } from '../helpers/fixtures.ts';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PEOPLE = 1_000;
const AT_ONCE = 4;

let server: TestServer;
let scim: Client;

beforeAll(async () => {
  server = await startTestServer();
  const platform = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  const acme = await createTenant(server.url, platform, 'Acme');
  scim = client(server.url, {
    token: (await acme.owner.api.post('/api/v1/scim-tokens', { name: 'Entra ID' })).body.token,
  });
});
afterAll(() => server?.stop());

it(`provisions ${PEOPLE} people, each looked up and then created, without an error`, async () => {
  const started = performance.now();
  const failures: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < PEOPLE) {
      const i = next++;
      const userName = `person-${String(i).padStart(4, '0')}@acme.test`;
      const found = await scim.get(`/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
      if (found.status !== 200 || found.body.totalResults !== 0) failures.push(`${userName} lookup: ${found.status}`);
      const created = await scim.post(
        '/scim/v2/Users',
        {
          schemas: [USER],
          userName,
          externalId: `ext-${i}`,
          active: true,
          displayName: `Person ${i}`,
          name: { givenName: 'Person', familyName: String(i) },
          emails: [{ value: userName, type: 'work', primary: true }],
        },
        { 'content-type': 'application/scim+json' },
      );
      if (created.status !== 201)
        failures.push(`${userName} create: ${created.status} ${JSON.stringify(created.body)}`);
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, worker));
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `SCIM initial sync: ${PEOPLE} people, ${PEOPLE * 2} requests, ${AT_ONCE} at a time, in ${seconds.toFixed(1)} s (${((PEOPLE * 2) / seconds).toFixed(0)} requests/s)`,
  );
  expect(failures).toEqual([]);
  const listed = await scim.get('/scim/v2/Users?count=1');
  expect(listed.body.totalResults).toBe(PEOPLE);
  expect(
    await server.base.db.membership.count({
      where: { organization: { name: 'Acme' }, user: { email: { startsWith: 'person-' } } },
    }),
  ).toBe(PEOPLE);
}, 300_000);
