// Password reset by a mailed link: POST /api/v1/auth/password-reset and /confirm, and the platform admin's
// POST /v1/users/{id}/password-reset, through a real SMTP server. The service trusts X-Forwarded-For here
// (TRUST_PROXY), so that each test asks from client addresses of its own and the limit per client address of one
// test does not spend another's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onStatement } from '../../schema/db.ts';
import { randomToken, sha256 } from '../../schema/lib/crypto.ts';
import { uuidv7 } from '../../schema/lib/ids.ts';
import { client, signIn, type Client, type Reply } from '../helpers/http.ts';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { movableClock, MINUTE } from '../helpers/clock.ts';
import { waitFor } from '../helpers/wait.ts';
import { addPerson, createTenant, PASSWORD, type Tenant } from '../helpers/fixtures.ts';
import { authorize, codeFrom, exchangeCode, registerClient, sessionOf, tokenRequest } from '../helpers/oauth.ts';

const REDIRECT = 'https://rp.example.test/cb';
const clock = movableClock();
let server: TestServer;
let smtp: TestSmtp;
let tenant: Tenant;
let admin: Client;
let adminId: string;

beforeAll(async () => {
  smtp = await startTestSmtp();
  server = await startTestServer({
    role: 'all',
    clock,
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Tessera Test <id@tessera.test>', TRUST_PROXY: 'true' },
  });
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  adminId = (await admin.get('/api/v1/users/me')).body.id;
  tenant = await createTenant(server.url, admin);
});
afterAll(async () => {
  await server?.stop();
  await smtp?.close();
});

let addresses = 0;
/** A client address no other request of the file comes from (198.18.0.0/15, the benchmarking range). */
const freshIp = () => `198.18.${Math.floor(addresses / 250)}.${(addresses++ % 250) + 1}`;

const ask = (email: unknown, ip = freshIp()) =>
  client(server.url).post('/api/v1/auth/password-reset', { email }, { 'x-forwarded-for': ip });
const confirm = (token: unknown, password: unknown) =>
  client(server.url).post('/api/v1/auth/password-reset/confirm', { token, password });
const login = (email: string, password: string) =>
  client(server.url).post('/api/v1/auth/login', { email, password }, { 'x-forwarded-for': freshIp() });
const freshMember = (label: string) => addPerson(server.url, tenant.owner.api, tenant.id, 'member', label);
const statusCounts = (replies: { status: number }[]) =>
  replies.reduce<Record<number, number>>((n, r) => ({ ...n, [r.status]: (n[r.status] ?? 0) + 1 }), {});

/** The token of the `count`-th reset link mailed to `email`. */
async function mailedToken(email: string, count = 1): Promise<string> {
  const mails = await smtp.waitForMail(email, /Reset your/, count);
  return smtp.linkIn(mails[count - 1]!, '/reset-password').searchParams.get('token')!;
}

/** Asks for a reset link for `person` and returns the token it mails. */
async function resetToken(person: { email: string }): Promise<string> {
  const before = smtp.received.filter(
    (m) => m.to === person.email.toLowerCase() && /Reset your/.test(m.subject),
  ).length;
  expect((await ask(person.email)).status).toBe(202);
  return mailedToken(person.email, before + 1);
}

const rowsFor = async (email: string) => ({
  linkTokens: await server.base.db.linkToken.count({ where: { email, purpose: 'password_reset' } }),
  mails: await server.base.db.mail.count({ where: { toAddress: email, kind: 'password_reset' } }),
});

/** Once every reset request taken so far has been looked at by the worker (its password_reset_mail job is done). */
const requestsHandled = () =>
  waitFor(async () => {
    const [row] = await server.base.db.$queryRaw<
      { n: number }[]
    >`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'password_reset_mail'`;
    return row!.n === 0 || undefined;
  });

const expectInvalid = (reply: Reply, path: string) => {
  expect(reply.status, JSON.stringify(reply.body)).toBe(400);
  expect(reply.body.error).toBe('invalid_request');
  expect(reply.body.details.map((d: { path: string }) => d.path)).toContain(path);
};

describe('POST /api/v1/auth/password-reset', () => {
  it('mails a link that sets a new password once and ends every session', async () => {
    const anonymous = client(server.url);
    const person = tenant.member;
    const asked = await ask(person.email);
    expect(asked.status).toBe(202);
    const [mail] = await smtp.waitForMail(person.email, /Reset your/);
    expect(mail!.from).toContain('id@tessera.test');
    const link = smtp.linkIn(mail!, '/reset-password');
    expect(link.origin).toBe(server.base.settings.issuer());
    const token = link.searchParams.get('token')!;

    const confirmed = await anonymous.post('/api/v1/auth/password-reset/confirm', {
      token,
      password: 'a brand new password',
    });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(204);
    expect((await person.api.get('/api/v1/users/me')).status).toBe(401);
    expect((await anonymous.post('/api/v1/auth/login', { email: person.email, password: PASSWORD })).status).toBe(401);
    expect(
      (await anonymous.post('/api/v1/auth/login', { email: person.email, password: 'a brand new password' })).status,
    ).toBe(200);
    const again = await anonymous.post('/api/v1/auth/password-reset/confirm', {
      token,
      password: 'yet another password',
    });
    expect(again.status).toBe(400);
    const [notice] = await smtp.waitForMail(person.email, /password was changed/);
    expect(notice!.text).toContain('Every session and token');
  });

  describe('a known and an unknown address', () => {
    // A service without the worker, so that only the requests' own statements are counted (the job that writes the
    // link runs later, in a worker); the bootstrap admin is the account that exists.
    let quiet: TestServer;
    beforeAll(async () => {
      quiet = await startTestServer({ role: 'api', env: { TRUST_PROXY: 'true' } });
    });
    afterAll(() => quiet?.stop());

    /** What the request wrote: the rows of the tables a reset may write to. */
    async function written() {
      const [row] = await quiet.base.db.$queryRaw<{ jobs: number; mails: number; links: number; users: number }[]>`
        select (select count(*)::int from graphile_worker.jobs where task_identifier = 'password_reset_mail') as jobs,
               (select count(*)::int from mails) as mails, (select count(*)::int from link_tokens) as links,
               (select count(*)::int from users) as users`;
      return row!;
    }

    /** The request as the wire carries it, the SQL statements the service sent while it ran, and what it wrote. */
    async function measured(email: string) {
      const statements: string[] = [];
      const before = await written();
      const stop = onStatement(quiet.base.db, (sql) => statements.push(sql));
      try {
        const res = await fetch(`${quiet.url}/api/v1/auth/password-reset`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': freshIp() },
          body: JSON.stringify({ email }),
        });
        const reply = { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
        stop();
        const after = await written();
        const wrote = {
          jobs: after.jobs - before.jobs,
          mails: after.mails - before.mails,
          links: after.links - before.links,
          users: after.users - before.users,
        };
        return { ...reply, statements, wrote };
      } finally {
        stop();
      }
    }

    it('get the same status and bytes, from the same SQL statements and the same writes, and only the known one gets a link', async () => {
      // given a service that has answered one request already (its caches are warm)
      const unknownEmail = 'nobody-at-all@example.test';
      await measured('warming-up@example.test');

      // when a reset is asked for the admin's address and for an address no account uses, twice each in turn
      const runs = [
        await measured(ADMIN.email),
        await measured(unknownEmail),
        await measured(unknownEmail),
        await measured(ADMIN.email),
      ];

      // then every answer is the same 202 with the same bytes
      for (const run of runs)
        expect({ status: run.status, body: run.body, type: run.type }).toEqual({
          status: 202,
          body: runs[0]!.body,
          type: runs[0]!.type,
        });
      expect(JSON.parse(runs[0]!.body)).toEqual({
        message: expect.stringContaining('If an account uses this address'),
      });
      // and the same statements ran, in the same order
      expect(runs[0]!.statements.length).toBeGreaterThan(0);
      for (const run of runs) expect(run.statements).toEqual(runs[0]!.statements);
      // and each wrote the same: one job, and neither a link nor a mail while the request was being answered
      for (const run of runs) expect(run.wrote).toEqual({ jobs: 1, mails: 0, links: 0, users: 0 });

      // when a worker runs the jobs
      const worker = await startTestServer({ databaseUrl: quiet.databaseUrl, role: 'worker' });
      try {
        // then the writes happened for the known address only
        const rows = async (email: string) => ({
          linkTokens: await quiet.base.db.linkToken.count({ where: { email } }),
          mails: await quiet.base.db.mail.count({ where: { toAddress: email, kind: 'password_reset' } }),
        });
        await waitFor(async () => (await written()).jobs === 0 || undefined);
        expect(await rows(ADMIN.email)).toEqual({ linkTokens: 2, mails: 2 });
        expect(await rows(unknownEmail)).toEqual({ linkTokens: 0, mails: 0 });
        expect(await rows('warming-up@example.test')).toEqual({ linkTokens: 0, mails: 0 });
        // and of the admin's two links only the newer one is live
        expect(await quiet.base.db.linkToken.count({ where: { email: ADMIN.email, endedAt: null } })).toBe(1);
      } finally {
        await worker.stop();
      }
    });
  });

  it('refuses the sixth request for one address in an hour with 429 and Retry-After, known or unknown alike', async () => {
    // given an account, and an address no account uses
    const person = await freshMember('throttled');
    const unknownEmail = `nobody-${person.id.slice(-6)}@example.test`;

    // when each is asked for six times, every time from another client address
    const known: Reply[] = [];
    const unknown: Reply[] = [];
    for (let i = 0; i < 6; i++) {
      known.push(await ask(person.email));
      unknown.push(await ask(unknownEmail));
    }

    // then the first five are accepted and the sixth refused, with the same answer for both
    expect(known.map((r) => r.status)).toEqual([202, 202, 202, 202, 202, 429]);
    expect(unknown.map((r) => r.status)).toEqual([202, 202, 202, 202, 202, 429]);
    for (const refused of [known[5]!, unknown[5]!]) {
      expect(refused.body.error).toBe('rate_limited');
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(3600);
    }
    expect(known[5]!.body).toEqual(unknown[5]!.body);
    // and the address written to in the case-insensitive form counts the same
    expect((await ask(person.email.toUpperCase())).status).toBe(429);
    // and five links and five mails were written for the account, none for the refused requests or the unknown address
    await smtp.waitForMail(person.email, /Reset your/, 5);
    await requestsHandled();
    expect(await rowsFor(person.email)).toEqual({ linkTokens: 5, mails: 5 });
    expect(await rowsFor(unknownEmail)).toEqual({ linkTokens: 0, mails: 0 });
  });

  it('refuses a client address past 20 requests in an hour, across addresses, and serves the others', async () => {
    // given one client address
    const ip = freshIp();

    // when it asks for 30 different addresses at once
    const replies = await Promise.all(Array.from({ length: 30 }, (_, i) => ask(`sprayed-${i}-${ip}@example.test`, ip)));

    // then exactly 20 are accepted and the rest refused with Retry-After
    expect(statusCounts(replies)).toEqual({ 202: 20, 429: 10 });
    for (const refused of replies.filter((r) => r.status === 429)) {
      expect(refused.body.error).toBe('rate_limited');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // and the 31st from it, for an account, is refused and writes nothing
    const person = await freshMember('sprayed');
    expect((await ask(person.email, ip)).status).toBe(429);
    await requestsHandled();
    expect(await rowsFor(person.email)).toEqual({ linkTokens: 0, mails: 0 });
    // while another client address is still served for the same account
    expect((await ask(person.email)).status).toBe(202);
  });

  it('refuses malformed input with 400 or 415, never a 500', async () => {
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      client(server.url).post('/api/v1/auth/password-reset', body, { 'x-forwarded-for': freshIp(), ...headers });

    expectInvalid(await post({ email: 'not an address' }), 'email');
    expectInvalid(await post({ email: 42 }), 'email');
    expectInvalid(await post({}), 'email');
    expectInvalid(await post({ email: 'a\u0000b@example.test' }), 'email');
    const unknownField = await post({ email: 'someone@example.test', admin: true });
    expectInvalid(unknownField, 'admin');
    expect(unknownField.body.details[0].message).toContain('not a known field');
    expect((await post([{ email: 'someone@example.test' }])).status).toBe(400);
    expect((await post('{"email": ', { 'content-type': 'application/json' })).status).toBe(400);

    const text = await post('email=someone@example.test', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.body.error).toBe('unsupported_media_type');
    expect(
      (await post('email=someone%40example.test', { 'content-type': 'application/x-www-form-urlencoded' })).status,
    ).toBe(415);
  });
});

describe('POST /api/v1/auth/password-reset/confirm', () => {
  it('refuses malformed input with 400 or 415, and a refused password leaves the link usable', async () => {
    // given a live link
    const person = await freshMember('malformed');
    const token = await resetToken(person);
    const post = (body: unknown, headers?: Record<string, string>) =>
      client(server.url).post('/api/v1/auth/password-reset/confirm', body, headers);

    // when it is sent with what cannot be right, then each is a 400 on the field (or a 415), and nothing changes
    expectInvalid(await confirm(token, 'too short'), 'password');
    expectInvalid(await confirm(token, 12345678901234), 'password');
    expectInvalid(await post({ token }), 'password');
    expectInvalid(await post({ password: 'a long enough new password' }), 'token');
    expectInvalid(await confirm(`${token}\u0000`, 'a long enough new password'), 'token');
    expectInvalid(await confirm('tsp_\u0000', 'a long enough new password'), 'token');
    expectInvalid(await confirm(token, 'a long enough\u0000password'), 'password');
    expectInvalid(await confirm('x'.repeat(5000), 'a long enough new password'), 'token');
    expectInvalid(await post({ token, password: 'a long enough new password', user_id: tenant.owner.id }), 'user_id');
    expect((await post(`token=${token}&password=x`, { 'content-type': 'text/plain' })).status).toBe(415);

    // and the link still works afterwards, once
    expect((await confirm(token, 'a long enough new password')).status).toBe(204);
    expect((await login(person.email, 'a long enough new password')).status).toBe(200);
  });

  it("mails links of their own prefix, and still takes one issued with the refresh tokens' old tsr_", async () => {
    // given a person with a link mailed now, and another with a link stored as one was before the prefix changed
    const person = await freshMember('prefix-new');
    expect(await resetToken(person)).toMatch(/^tsp_/);
    const before = await freshMember('prefix-old');
    const old = randomToken('tsr_');
    const now = clock.now();
    await server.base.db.linkToken.create({
      data: {
        id: uuidv7(),
        userId: (await server.base.db.user.findUniqueOrThrow({ where: { email: before.email } })).id,
        purpose: 'password_reset',
        tokenHash: sha256(old),
        email: before.email,
        expiresAt: new Date(now.getTime() + 60 * MINUTE),
        createdAt: now,
      },
    });

    // when the old link is used, then it sets the password, once
    expect((await confirm(old, 'an old link password')).status).toBe(204);
    expect((await login(before.email, 'an old link password')).status).toBe(200);
    expectInvalid(await confirm(old, 'a second use password'), 'token');
  });

  it('refuses an unknown token like a used one: 400 on token', async () => {
    const reply = await confirm('tsp_this-was-never-issued-by-anyone-at-all-0000', 'a long enough new password');
    expectInvalid(reply, 'token');
    expect(reply.body.details).toEqual([{ path: 'token', message: 'is not a valid link' }]);
  });

  it('of 5 concurrent requests for one address, leaves only one link live', async () => {
    // given a person
    const person = await freshMember('asked-at-once');

    // when five reset requests for their address arrive at once, from five client addresses
    const replies = await Promise.all(Array.from({ length: 5 }, () => ask(person.email)));

    // then all are answered 202, and five links are mailed
    expect(statusCounts(replies)).toEqual({ 202: 5 });
    const tokens = await Promise.all([1, 2, 3, 4, 5].map((n) => mailedToken(person.email, n)));
    // but only one of them is live: each issuer voided what the one before it had committed
    expect(
      await server.base.db.linkToken.count({ where: { userId: person.id, purpose: 'password_reset', endedAt: null } }),
    ).toBe(1);
    const used = await Promise.all(tokens.map((token, i) => confirm(token, `concurrently asked password ${i}`)));
    expect(statusCounts(used)).toEqual({ 204: 1, 400: 4 });
  });

  it('voids the older link when a newer one is mailed', async () => {
    // given a person who asked twice
    const person = await freshMember('twice');
    const older = await resetToken(person);
    const newer = await resetToken(person);
    expect(newer).not.toBe(older);

    // when the older link is used, then it is refused, and the password is unchanged
    expectInvalid(await confirm(older, 'an older link password'), 'token');
    expect((await login(person.email, PASSWORD)).status).toBe(200);

    // and the newer one works
    expect((await confirm(newer, 'the newer link password')).status).toBe(204);
    expect((await login(person.email, 'the newer link password')).status).toBe(200);
    // and neither works again
    expectInvalid(await confirm(older, 'an older link password'), 'token');
    expectInvalid(await confirm(newer, 'the newer link password again'), 'token');
  });

  it('of 20 concurrent uses of one link, lets exactly one set the password', async () => {
    // given a live link
    const person = await freshMember('racer');
    const token = await resetToken(person);

    // when 20 confirmations with 20 different passwords arrive at once
    const passwords = Array.from({ length: 20 }, (_, i) => `racing password number ${i}`);
    const replies = await Promise.all(passwords.map((password) => confirm(token, password)));

    // then one is 204 and the 19 others are 400 on token, none a 5xx
    expect(statusCounts(replies)).toEqual({ 204: 1, 400: 19 });
    for (const refused of replies.filter((r) => r.status === 400))
      expect(refused.body.details).toEqual([{ path: 'token', message: 'is not a valid link' }]);
    // and the password is the winner's
    const winner = passwords[replies.findIndex((r) => r.status === 204)]!;
    const loser = passwords.find((p) => p !== winner)!;
    expect((await login(person.email, loser)).status).toBe(401);
    expect((await login(person.email, winner)).status).toBe(200);
    // and it happened once: one event per organization, one audit entry, one notice
    const changed = await server.base.db.event.findMany({
      where: { kind: 'user.password.changed', organizationId: tenant.id },
    });
    expect(changed.filter((e) => JSON.parse(e.body).data.user.id === person.id)).toHaveLength(1);
    expect(await server.base.db.auditLog.count({ where: { action: 'user.password.reset', targetId: person.id } })).toBe(
      1,
    );
    await smtp.waitForMail(person.email, /password was changed/);
    expect(await server.base.db.mail.count({ where: { toAddress: person.email, kind: 'password_changed' } })).toBe(1);
  });

  it('ends the sessions, the OAuth access tokens and the refresh tokens of the person', async () => {
    // given a person with two sessions and, through the code flow, an access token and a refresh token
    const person = await freshMember('tokens');
    const session = await sessionOf(server.url, person);
    const app = await registerClient(admin, {
      name: 'Reset app',
      organization_id: tenant.id,
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid', 'email', 'api'],
      consent_required: false,
    });
    const back = await authorize(server.url, session, {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid email api',
      nonce: 'n',
      state: 's',
    });
    const first = await exchangeCode(server.url, app, codeFrom(back), REDIRECT);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const refresh = (token: string) =>
      tokenRequest(server.url, {
        grant_type: 'refresh_token',
        refresh_token: token,
        client_id: app.client_id,
        client_secret: app.client_secret,
      });
    // (the refresh token works before: it is rotated into the one kept)
    const tokens = await refresh(first.body.refresh_token);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    const { access_token: accessToken, refresh_token: refreshToken } = tokens.body;
    const userinfo = (token: string) =>
      fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${token}` } });
    expect((await userinfo(accessToken)).status).toBe(200);
    expect((await client(server.url, { token: accessToken }).get('/api/v1/users/me')).status).toBe(200);
    expect((await client(server.url, { token: session }).get('/api/v1/users/me')).status).toBe(200);

    // when the password is reset by the mailed link
    expect((await confirm(await resetToken(person), 'after the reset password')).status).toBe(204);

    // then neither session works any more
    expect((await person.api.get('/api/v1/users/me')).status).toBe(401);
    expect((await client(server.url, { token: session }).get('/api/v1/users/me')).status).toBe(401);
    // and the access token is refused at userinfo and at the API
    expect((await userinfo(accessToken)).status).toBe(401);
    expect((await client(server.url, { token: accessToken }).get('/api/v1/users/me')).status).toBe(401);
    // and the refresh token gives nothing
    const refused = await refresh(refreshToken);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    // while a new sign-in with the new password works
    expect((await login(person.email, 'after the reset password')).status).toBe(200);
  });

  it('emits user.password.changed and user.email.verified to the organizations and audits user.password.reset', async () => {
    // given a person of two organizations whose address is not verified yet
    const person = await freshMember('evented');
    const other = await createTenant(server.url, admin);
    const invite = await other.owner.api.post(`/v1/organizations/${other.id}/invitations`, {
      email: person.email,
      role: 'member',
    });
    expect((await person.api.post('/api/v1/invitations/accept', { token: invite.body.token })).status).toBe(200);
    // (accepting a mailed invitation proved the address: a platform admin marks it unproven again)
    expect((await admin.patch(`/v1/users/${person.id}`, { email_verified: false })).status).toBe(200);
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: person.id } })).emailVerified).toBe(false);

    // when the password is reset by the mailed link
    expect((await confirm(await resetToken(person), 'an evented new password')).status).toBe(204);

    // then each organization got one user.password.changed and one user.email.verified about the person
    const about = async (kind: string) =>
      (await server.base.db.event.findMany({ where: { kind } }))
        .filter((e) => JSON.parse(e.body).data.user.id === person.id)
        .map((e) => e.organizationId)
        .sort();
    expect(await about('user.password.changed')).toEqual([tenant.id, other.id].sort());
    expect(await about('user.email.verified')).toEqual([tenant.id, other.id].sort());
    const [event] = (
      await server.base.db.event.findMany({ where: { kind: 'user.password.changed', organizationId: tenant.id } })
    ).filter((e) => JSON.parse(e.body).data.user.id === person.id);
    const body = JSON.parse(event!.body);
    expect(body).toMatchObject({
      event: 'user.password.changed',
      organization: { id: tenant.id },
      data: { user: { id: person.id } },
    });
    expect(event!.body).not.toMatch(/password_hash|passwordHash|tsp_/);
    // and the address is verified now
    expect((await server.base.db.user.findUniqueOrThrow({ where: { id: person.id } })).emailVerified).toBe(true);
    // and the reset is audited as the person's own act
    const audits = await server.base.db.auditLog.findMany({
      where: { action: 'user.password.reset', targetId: person.id },
    });
    expect(audits).toEqual([expect.objectContaining({ actorId: person.id, targetType: 'user', outcome: 'success' })]);
    expect(JSON.stringify(audits[0]!.details)).not.toMatch(/tsp_|an evented new password/);

    // and a second reset, the address now verified, emits user.password.changed again but no user.email.verified
    expect((await confirm(await resetToken(person), 'a second evented password')).status).toBe(204);
    expect(await about('user.password.changed')).toHaveLength(4);
    expect(await about('user.email.verified')).toHaveLength(2);
  });

  it('lets a locked account sign in right after a reset', async () => {
    // given an account locked by five wrong passwords
    const person = await freshMember('locked');
    for (let i = 0; i < 5; i++) expect((await login(person.email, `wrong guess ${i}`)).status).toBe(401);
    const locked = await login(person.email, PASSWORD);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);

    // when its owner resets the password by the mailed link
    expect((await confirm(await resetToken(person), 'unlocked by the link')).status).toBe(204);

    // then signing in with the new password works at once
    expect((await login(person.email, 'unlocked by the link')).status).toBe(200);
  });
});

describe('POST /v1/users/{id}/password-reset', () => {
  it('lets a platform admin mail a person a link, audited, that the person uses', async () => {
    // given a person
    const person = await freshMember('helped');

    // when a platform admin sends a reset link
    const sent = await admin.post(`/v1/users/${person.id}/password-reset`);

    // then it is accepted and the person gets a link that works
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    expect(sent.body).toEqual({ message: expect.any(String) });
    expect(JSON.stringify(sent.body)).not.toMatch(/tsp_/);
    const token = await mailedToken(person.email);
    expect((await confirm(token, 'set by the person')).status).toBe(204);
    expect((await login(person.email, 'set by the person')).status).toBe(200);
    // and the sending is audited as the admin's act
    const audits = await server.base.db.auditLog.findMany({
      where: { action: 'user.password_reset.send', targetId: person.id },
    });
    expect(audits).toEqual([expect.objectContaining({ actorId: adminId, targetType: 'user', outcome: 'success' })]);
  });

  it('refuses an organization owner with 403, even for a member of the organization', async () => {
    const person = await freshMember('owned');
    const reply = await tenant.owner.api.post(`/v1/users/${person.id}/password-reset`);
    expect(reply.status).toBe(403);
    expect(reply.body.error).toBe('forbidden');
    expect(await rowsFor(person.email)).toEqual({ linkTokens: 0, mails: 0 });
  });

  it('refuses an OAuth access token with 403, even a platform admin’s', async () => {
    // given an `api` access token of the platform admin, from a client of the operator organization
    const person = await freshMember('by-token');
    const operator = await server.base.db.membership.findFirstOrThrow({
      where: { userId: adminId },
      select: { organizationId: true },
    });
    const app = await registerClient(admin, {
      name: 'Operator app',
      organization_id: operator.organizationId,
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid', 'api'],
      consent_required: false,
    });
    const session = (await signIn(server.url, ADMIN.email, ADMIN.password)).login.token;
    const back = await authorize(server.url, session, {
      client_id: app.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid api',
      nonce: 'n',
      state: 's',
    });
    const tokens = await exchangeCode(server.url, app, codeFrom(back), REDIRECT);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    const byToken = client(server.url, { token: tokens.body.access_token });
    expect((await byToken.get(`/v1/users/${person.id}`)).status).toBe(200);

    // when it asks for a reset link for the person, then it is refused and nothing is written
    const reply = await byToken.post(`/v1/users/${person.id}/password-reset`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(403);
    expect(await rowsFor(person.email)).toEqual({ linkTokens: 0, mails: 0 });
  });

  it('answers 404 for an unknown user', async () => {
    const reply = await admin.post('/v1/users/00000000-0000-4000-8000-000000000000/password-reset');
    expect(reply.status).toBe(404);
    expect(reply.body.error).toBe('not_found');
  });

  it('gives an admin no way to set a person’s password', async () => {
    const person = await freshMember('untouched');
    const reply = await admin.patch(`/v1/users/${person.id}`, { password: 'chosen by the admin' });
    expectInvalid(reply, 'password');
    expect(reply.body.details[0].message).toContain('not a known field');
    const viaGraphql = await admin.post('/graphql', {
      query: 'mutation($id: ID!) { updateUser(id: $id, input: { password: "chosen by the admin" }) { __typename } }',
      variables: { id: person.id },
    });
    expect(viaGraphql.body.errors?.[0]?.message, JSON.stringify(viaGraphql.body)).toMatch(/password/);
    expect((await login(person.email, 'chosen by the admin')).status).toBe(401);
    expect((await login(person.email, PASSWORD)).status).toBe(200);
  });
});

describe('the mail log', () => {
  // Were the log to show a mail's bodies before SMTP took it, a platform admin who asks for a person's reset (or whose
  // SMTP server is answering 4xx) would read the link and set the person's password.
  it('never shows a platform admin a live reset link, even while SMTP has not taken the mail', async () => {
    // given a person, an outbox that has sent everything, and an SMTP server that answers the next mail with 451
    const person = await freshMember('read-by-admin');
    await waitFor(
      async () =>
        (await server.base.db.mail.count({ where: { status: { in: ['queued', 'retrying'] } } })) === 0 || undefined,
    );
    smtp.refuse(1, 451);

    // when a platform admin sends the person a reset link and reads the mail log while the mail waits for a retry
    expect((await admin.post(`/v1/users/${person.id}/password-reset`)).status).toBe(202);
    const waiting = await waitFor(async () => {
      const reply = await admin.get(`/api/v1/mails?to=${encodeURIComponent(person.email)}`);
      return reply.body.mails.find(
        (m: { kind: string; status: string }) => m.kind === 'password_reset' && m.status === 'retrying',
      );
    });

    // then the log does not carry the link's token
    expect(`${waiting.text ?? ''} ${waiting.html ?? ''}`).not.toMatch(/tsp_/);
  });
});

// Last: it moves the service's clock forward for good.
describe('an expired link', () => {
  it('works until its hour is up and is refused after', async () => {
    // given two people with fresh links
    const early = await freshMember('early');
    const late = await freshMember('late');
    const earlyToken = await resetToken(early);
    const lateToken = await resetToken(late);

    // when 59 minutes pass, then a link still works
    clock.advance(59 * MINUTE);
    expect((await confirm(earlyToken, 'just in time password')).status).toBe(204);

    // and when the hour is up, the other is refused with 400 on token, and the password is unchanged
    clock.advance(2 * MINUTE);
    const refused = await confirm(lateToken, 'too late password');
    expectInvalid(refused, 'token');
    expect(refused.body.details).toEqual([{ path: 'token', message: 'is not a valid link' }]);
    expect((await login(late.email, 'too late password')).status).toBe(401);
    expect((await login(late.email, PASSWORD)).status).toBe(200);
    // and a new link works again
    expect((await confirm(await resetToken(late), 'a fresh link password')).status).toBe(204);
  });
});
