// The answer on the consent page is one atomic write: marking the request answered, remembering the consent,
// the audit entries and the code stand or fall together. A failure halfway (here: writing the code) leaves
// nothing behind, so the same request can still be answered, and no consent is remembered for a code never given.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import type { Client } from '../helpers/http.ts';
import type { Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  decideConsent,
  registerClient,
  startWithSignedInMember,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/cb';
let server: TestServer;
let admin: Client;
let tenant: Tenant;
let session: string;
let app: RegisteredClient;
let db: pg.Client;

beforeAll(async () => {
  ({ server, admin, tenant, session } = await startWithSignedInMember());
  app = await registerClient(admin, {
    name: 'Asks',
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email'],
    organization_id: tenant.id,
  });
  db = new pg.Client({ connectionString: server.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await server?.stop();
});

/** What the decision leaves in the database for this user and client. */
async function traces() {
  const one = async (sql: string) => Number((await db.query(sql, [tenant.member.id, app.id])).rows[0].n);
  return {
    answers: Number((await db.query('select count(*) as n from oauth_consent_answers')).rows[0].n),
    consents: await one('select count(*) as n from oauth_consents where user_id = $1 and client_id = $2'),
    grants: await one('select count(*) as n from oauth_grants where user_id = $1 and client_id = $2'),
    codes: await one('select count(*) as n from authorization_codes where user_id = $1 and client_id = $2'),
    audit: await one(
      `select count(*) as n from audit_logs where actor_id = $1 and target_id = $2 and action in ('oauth.consent.grant', 'oauth.authorize')`,
    ),
  };
}

describe('deciding consent', () => {
  it('a failure while writing the code leaves nothing: not answered, nothing remembered, no audit; the request can be answered again', async () => {
    // given a pending consent request, and a database that refuses to store codes
    const consentPage = await authorize(server.url, session, {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid email',
      state: 's',
    });
    expect(consentPage.pathname).toBe('/consent');
    const before = await traces();
    await db.query(
      `create function refuse_codes() returns trigger language plpgsql as $$ begin raise exception 'codes refused for this test'; end $$`,
    );
    await db.query(
      'create trigger refuse_codes before insert on authorization_codes for each row execute function refuse_codes()',
    );

    // when the user allows
    await expect(decideConsent(server.url, session, consentPage)).rejects.toThrow(/decideConsent failed/);

    // then nothing of the decision was kept
    expect(await traces()).toEqual(before);

    // and once codes can be stored again, the same request is answered and the application gets its code
    await db.query('drop trigger refuse_codes on authorization_codes');
    const back = await decideConsent(server.url, session, consentPage);
    expect(codeFrom(back)).toMatch(/^tsa_/);
    expect(back.searchParams.get('state')).toBe('s');
    expect(await traces()).toEqual({ answers: before.answers + 1, consents: 1, grants: 1, codes: 1, audit: 2 });

    // and the consent is remembered: the next request skips the page
    const again = await authorize(server.url, session, {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid',
      state: 't',
    });
    expect(codeFrom(again)).toMatch(/^tsa_/);
  });

  it('remembered scopes are merged, in the order first allowed', async () => {
    const ask = (scope: string) =>
      authorize(server.url, session, {
        client_id: app.client_id,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope,
        prompt: 'consent',
      });
    codeFrom(await decideConsent(server.url, session, await ask('email')));
    const { rows } = await db.query('select scopes from oauth_consents where user_id = $1 and client_id = $2', [
      tenant.member.id,
      app.id,
    ]);
    expect(rows[0].scopes).toEqual(['openid', 'email']);
  });
});
