// Ending a session ends what came from it (docs/architecture.md#identity-sessions-and-tokens): a grant records the
// session that authorized it, and ending that session (one, all others, a sign-out) ends the grant. Its refresh
// tokens stop at once (invalid_grant) and its access tokens at their next use (401 at userinfo, REST and GraphQL),
// while a grant authorized by another, still live session of the same person keeps working.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeContext } from '../../schema/context.ts';
import { endSessions } from '../../schema/modules/sessions/sessions.service.ts';
import type { TestServer } from '../helpers/server.ts';
import { client, type Client } from '../helpers/http.ts';
import { addPerson, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import {
  authorize,
  codeFrom,
  decideConsent,
  exchangeCode,
  registerClient,
  startWithSignedInMember,
  tokenRequest,
  type RegisteredClient,
} from '../helpers/oauth.ts';

const REDIRECT = 'https://app.example.test/cb';
const SCOPE = 'openid email offline_access api';

let server: TestServer;
let tenant: Tenant;
let app: RegisteredClient;
let asking: RegisteredClient;

beforeAll(async () => {
  let admin: Client;
  ({ server, admin, tenant } = await startWithSignedInMember());
  const body = {
    redirect_uris: [REDIRECT],
    allowed_scopes: ['openid', 'email', 'offline_access', 'api'],
    organization_id: tenant.id,
  };
  app = await registerClient(admin, { ...body, name: 'Connected app', consent_required: false });
  asking = await registerClient(admin, { ...body, name: 'App that asks', consent_required: true });
});
afterAll(() => server?.stop());

interface Browser {
  api: Client;
  token: string;
  id: string;
}

/** A sign-in from a browser of its own. */
async function signInAs(person: Person): Promise<Browser> {
  const reply = await client(server.url).post('/api/v1/auth/login', { email: person.email, password: PASSWORD });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  const api = client(server.url, { token: reply.body.token });
  return { api, token: reply.body.token, id: (await api.get('/api/v1/auth/session')).body.session.id };
}

interface Tokens {
  access_token: string;
  refresh_token: string;
}

/** The tokens `c` gets through the code flow that `browser`'s session authorizes (on the consent page when asked). */
async function tokensFrom(browser: Browser, c: RegisteredClient = app): Promise<Tokens> {
  let back = await authorize(server.url, browser.token, {
    client_id: c.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: SCOPE,
    state: 's',
  });
  if (back.pathname === '/consent') back = await decideConsent(server.url, browser.token, back);
  const tokens = await exchangeCode(server.url, c, codeFrom(back), REDIRECT);
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return tokens.body;
}

const refresh = (refreshToken: string, c: RegisteredClient = app) =>
  tokenRequest(server.url, {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: c.client_id,
    client_secret: c.client_secret,
  });

const userinfo = (accessToken: string) =>
  fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });

/** The access token on each interface that takes one: userinfo, REST and GraphQL. */
async function statusesOf(accessToken: string): Promise<number[]> {
  const api = client(server.url, { token: accessToken });
  return [
    (await userinfo(accessToken)).status,
    (await api.get('/api/v1/users/me')).status,
    (await api.post('/graphql', { query: '{ me { id } }' })).status,
  ];
}

async function expectEnded(tokens: Tokens, c: RegisteredClient = app) {
  expect(await statusesOf(tokens.access_token)).toEqual([401, 401, 401]);
  const refused = await refresh(tokens.refresh_token, c);
  expect(refused.status, JSON.stringify(refused.body)).toBe(400);
  expect(refused.body.error).toBe('invalid_grant');
}

async function expectStanding(tokens: Tokens): Promise<Tokens> {
  expect(await statusesOf(tokens.access_token)).toEqual([200, 200, 200]);
  const refreshed = await refresh(tokens.refresh_token);
  expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
  return refreshed.body;
}

const newPerson = () => addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'session-end');

describe('a grant records the session that authorized it', () => {
  it('at the authorization endpoint and on the consent page; a client_credentials grant has none', async () => {
    const person = await newPerson();
    const browser = await signInAs(person);
    await tokensFrom(browser, app);
    await tokensFrom(browser, asking);
    const grants = await server.base.db.oAuthGrant.findMany({
      where: { userId: person.id },
      select: { sessionId: true },
    });
    expect(grants).toEqual([{ sessionId: browser.id }, { sessionId: browser.id }]);

    const machine = await registerClient(tenant.admin.api, {
      name: 'Machine',
      grant_types: ['client_credentials'],
      allowed_scopes: ['organization'],
    });
    const issued = await tokenRequest(server.url, {
      grant_type: 'client_credentials',
      client_id: machine.client_id,
      client_secret: machine.client_secret,
    });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    expect(
      await server.base.db.oAuthGrant.findMany({ where: { clientId: machine.id }, select: { sessionId: true } }),
    ).toEqual([{ sessionId: null }]);
  });
});

describe('DELETE /api/v1/auth/sessions/{id}', () => {
  it("ends the grants that session authorized: the access token answers 401 and the refresh token invalid_grant; another session's grant stands", async () => {
    const person = await newPerson();
    const laptop = await signInAs(person);
    const phone = await signInAs(person);
    const fromLaptop = await tokensFrom(laptop);
    // A refresh before the end: what it issued belongs to the same grant, and ends with it.
    const refreshed = await expectStanding(await tokensFrom(laptop));
    const consented = await tokensFrom(laptop, asking);
    const fromPhone = await tokensFrom(phone);

    const ended = await phone.api.delete(`/api/v1/auth/sessions/${laptop.id}`);
    expect(ended.status, JSON.stringify(ended.body)).toBe(204);

    await expectEnded(fromLaptop);
    await expectEnded(refreshed);
    await expectEnded(consented, asking);
    await expectStanding(fromPhone);
  });
});

describe('DELETE /api/v1/auth/sessions', () => {
  it("ends the grants of every other session; the current session's grant stands", async () => {
    const person = await newPerson();
    const mine = await signInAs(person);
    const others = [await signInAs(person), await signInAs(person)];
    const theirs = [await tokensFrom(others[0]!), await tokensFrom(others[1]!)];
    const own = await tokensFrom(mine);

    const ended = await mine.api.delete('/api/v1/auth/sessions');
    expect(ended.status, JSON.stringify(ended.body)).toBe(200);

    for (const tokens of theirs) await expectEnded(tokens);
    await expectStanding(own);
  });
});

describe('signing out', () => {
  it('POST /api/v1/auth/logout ends the grants of the session it ends', async () => {
    const person = await newPerson();
    const leaving = await signInAs(person);
    const staying = await signInAs(person);
    const left = await tokensFrom(leaving);
    const kept = await tokensFrom(staying);

    expect((await leaving.api.post('/api/v1/auth/logout')).status).toBe(204);

    await expectEnded(left);
    await expectStanding(kept);
  });

  it('RP-initiated logout (/oauth/logout with an id_token_hint) ends the grants of the session it ends', async () => {
    const person = await newPerson();
    const leaving = await signInAs(person);
    const staying = await signInAs(person);
    const left = await tokensFrom(leaving);
    const idToken = (await refresh(left.refresh_token)).body as Tokens & { id_token: string };
    const kept = await tokensFrom(staying);

    const res = await fetch(`${server.url}/oauth/logout?${new URLSearchParams({ id_token_hint: idToken.id_token })}`, {
      redirect: 'manual',
      headers: { cookie: `tessera_session=${leaving.token}` },
    });
    expect(res.status).toBeLessThan(400);
    expect((await leaving.api.get('/api/v1/auth/session')).status).toBe(401);

    await expectEnded(idToken);
    await expectStanding(kept);
  });
});

describe('endSessions for every session of a person', () => {
  it("ends them all and every grant they authorized (what a directory's deactivation calls), and no one else's", async () => {
    const person = await newPerson();
    const browsers = [await signInAs(person), await signInAs(person)];
    const theirs = [await tokensFrom(browsers[0]!), await tokensFrom(browsers[1]!)];
    const someone = await signInAs(await newPerson());
    const untouched = await tokensFrom(someone);

    const ctx = makeContext(server.base, null, { requestId: 'session-end', ip: '127.0.0.1', userAgent: 'vitest' });
    const ended = await server.base.db.$transaction((tx) => endSessions(ctx, tx, { userId: person.id }));
    // The two sign-ins, and the session the person got when accepting the invitation.
    expect(ended).toHaveLength(3);
    expect(ended.map((s) => s.id)).toEqual(expect.arrayContaining(browsers.map((b) => b.id)));

    for (const api of [...browsers.map((b) => b.api), person.api])
      expect((await api.get('/api/v1/auth/session')).status).toBe(401);
    for (const tokens of theirs) await expectEnded(tokens);
    await expectStanding(untouched);
  });
});

describe('an ending while the session authorizes', () => {
  it('leaves no grant of that session standing, whichever statement comes first', async () => {
    const person = await newPerson();
    const browser = await signInAs(person);
    const other = await signInAs(person);
    const params = {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: SCOPE,
      state: 's',
    };
    const before = await authorize(server.url, browser.token, params);
    const authorizing = Array.from({ length: 40 }, () => authorize(server.url, browser.token, params));
    const ending = other.api.delete(`/api/v1/auth/sessions/${browser.id}`);
    const [ended, ...raced] = await Promise.all([ending, ...authorizing]);
    const outcomes = [before, ...raced];
    expect(ended.status).toBe(204);
    // Some came back with a code before the end, the rest were sent to sign in: none failed.
    for (const back of outcomes)
      expect(back.searchParams.has('code') || back.pathname === '/login', back.toString()).toBe(true);
    expect(await server.base.db.oAuthGrant.count({ where: { sessionId: browser.id } })).toBeGreaterThan(0);
    expect(await server.base.db.oAuthGrant.count({ where: { sessionId: browser.id, revokedAt: null } })).toBe(0);
    for (const back of outcomes.filter((b) => b.searchParams.has('code'))) {
      const tokens = await exchangeCode(server.url, app, codeFrom(back), REDIRECT);
      expect(tokens.body.error, JSON.stringify(tokens.body)).toBe('invalid_grant');
    }
  });
});
