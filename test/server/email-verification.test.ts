// Address verification and e-mail change by mailed links: PATCH /api/v1/users/me with a new address,
// POST /api/v1/users/me/email/verify-request and POST /api/v1/auth/verify-email, through a real SMTP server.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { DAY, MINUTE, movableClock } from '../helpers/clock.ts';
import {
  authorize,
  codeFrom,
  exchangeCode,
  registerClient,
  sessionOf,
  type RegisteredClient,
} from '../helpers/oauth.ts';
import { expectMatchesOpenApi } from '../helpers/openapi.ts';

const clock = movableClock();
const REDIRECT = 'https://app.example.test/cb';
const CHANGE = /Confirm your new e-mail address/;
const VERIFY = /Confirm your e-mail address/;
const CHANGED = /The e-mail address of your Tessera account was changed/;

let smtp: TestSmtp;
let server: TestServer;
let admin: Client;
let anonymous: Client;
let tenant: Tenant;

beforeAll(async () => {
  smtp = await startTestSmtp();
  server = await startTestServer({ role: 'all', env: { SMTP_URL: smtp.url }, clock });
  admin = (await signIn(server.url, ADMIN.email, ADMIN.password)).api;
  anonymous = client(server.url);
  tenant = await createTenant(server.url, admin);
});
afterAll(async () => {
  await server?.stop();
  await smtp?.close();
});

const newAddress = (label = 'new') => `${label}-${randomBytes(4).toString('hex')}@example.test`;

/** A fresh member of the tenant; accepting the invitation verified its address. */
const freshMember = (label = 'person') => addPerson(server.url, tenant.owner.api, tenant.id, 'member', label);

/** A fresh member whose address a platform admin marked unverified. */
async function unverifiedMember(label = 'unverified'): Promise<Person> {
  const person = await freshMember(label);
  expect((await admin.patch(`/v1/users/${person.id}`, { email_verified: false })).body.email_verified).toBe(false);
  return person;
}

const verify = (token: unknown) => anonymous.post('/api/v1/auth/verify-email', { token });
const requestLink = (as: Client) => as.post('/api/v1/users/me/email/verify-request');
const askFor = (person: Person, email: string) =>
  person.api.patch('/api/v1/users/me', { email, current_password: PASSWORD });

/**
 * Runs `action` and returns the token of the /verify-email link in the one more mail to `to`, with a subject matching
 * `subject`, that arrives after it.
 */
async function linkMailed(to: string, subject: RegExp, action: () => Promise<unknown>): Promise<string> {
  const before = smtp.received.filter((m) => m.to === to && subject.test(m.subject)).length;
  await action();
  const mails = await smtp.waitForMail(to, subject, before + 1);
  const link = smtp.linkIn(mails.at(-1)!, '/verify-email');
  expect(link.origin).toBe(server.base.settings.issuer());
  return link.searchParams.get('token')!;
}

/** Asks for `email` as `person` (expecting 200) and returns the token of the link mailed there. */
const changeLink = (person: Person, email: string) =>
  linkMailed(email, CHANGE, async () => expect((await askFor(person, email)).status).toBe(200));

/** Asks for a link to the person's unverified address (expecting 202) and returns its token. */
const verificationLink = (person: Person) =>
  linkMailed(person.email, VERIFY, async () => expect((await requestLink(person.api)).status).toBe(202));

const eventsAbout = async (kind: string, userId: string) =>
  (await server.base.db.event.findMany({ where: { kind }, orderBy: { id: 'asc' } }))
    .map((e) => JSON.parse(e.body).data)
    .filter((d) => d.user?.id === userId);
const auditAbout = (action: string, userId: string) =>
  server.base.db.auditLog.findMany({ where: { action, targetId: userId } });
const userRow = (id: string) => server.base.db.user.findUniqueOrThrow({ where: { id } });

describe('PATCH /api/v1/users/me with a new e-mail address', () => {
  it('keeps the old address, shows the new one as pending and mails a link there; nothing is announced yet', async () => {
    const person = await freshMember();
    const next = newAddress('next');

    const reply = await askFor(person, next.toUpperCase());

    expect(reply.status).toBe(200);
    expectMatchesOpenApi('PATCH', '/api/v1/users/me', reply);
    expect(reply.body).toMatchObject({ id: person.id, email: person.email, email_verified: true, pending_email: next });
    expect((await person.api.get('/api/v1/users/me')).body).toMatchObject({ email: person.email, pending_email: next });
    const [mail] = await smtp.waitForMail(next, CHANGE);
    expect(mail!.text).toContain('takes effect once you confirm it');
    expect(smtp.linkIn(mail!, '/verify-email').origin).toBe(server.base.settings.issuer());
    expect((await userRow(person.id)).email).toBe(person.email);
    expect(await eventsAbout('user.updated', person.id)).toEqual([]);
    expect(await auditAbout('user.update', person.id)).toContainEqual(
      expect.objectContaining({ details: { fields: [], pendingEmail: next } }),
    );
    // The pending address is the caller's to see, not an administrator's.
    expect((await admin.get(`/v1/users/${person.id}`)).body.pending_email).toBeUndefined();
  });

  it('answers 409 for a taken address, and mails nothing', async () => {
    const person = await freshMember();

    const reply = await askFor(person, tenant.admin.email);

    expect(reply.status).toBe(409);
    expect(reply.body.error).toBe('conflict');
    expect((await person.api.get('/api/v1/users/me')).body.pending_email).toBeNull();
    expect(await server.base.db.mail.count({ where: { toAddress: tenant.admin.email, kind: 'email_change' } })).toBe(0);
  });

  it('answers 400 for an address with a NUL byte or that is not an address', async () => {
    const person = await freshMember();
    for (const email of [`nul\u0000${newAddress()}`, `${newAddress()}\u0000`, 'not an address', '', 42, null]) {
      const reply = await askFor(person, email as string);
      expect(reply.status, JSON.stringify(email)).toBe(400);
      expect(
        reply.body.details.map((d: { path: string }) => d.path),
        JSON.stringify(email),
      ).toEqual(['email']);
    }
    expect((await person.api.get('/api/v1/users/me')).body.pending_email).toBeNull();
  });
});

describe('POST /api/v1/auth/verify-email with an e-mail change link', () => {
  it('makes the new address the account’s, verified, announces it and tells the old address', async () => {
    const person = await freshMember();
    const next = newAddress('moved');
    const token = await changeLink(person, next);

    const reply = await verify(token);

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expectMatchesOpenApi('POST', '/api/v1/auth/verify-email', reply);
    expect(reply.body).toMatchObject({ id: person.id, email: next, email_verified: true });
    expect((await person.api.get('/api/v1/users/me')).body).toMatchObject({
      email: next,
      email_verified: true,
      pending_email: null,
    });
    expect((await eventsAbout('user.updated', person.id)).map((d) => [d.user.email, d.changes])).toEqual([
      [next, ['email']],
    ]);
    expect((await eventsAbout('user.email.verified', person.id)).map((d) => d.user.email)).toEqual([next]);
    expect(await auditAbout('user.email.change', person.id)).toEqual([
      expect.objectContaining({ actorId: person.id, details: { from: person.email, to: next } }),
    ]);
    const [notice] = await smtp.waitForMail(person.email, CHANGED);
    expect(notice!.text).toContain(next);
    expect((await anonymous.post('/api/v1/auth/login', { email: next, password: PASSWORD })).status).toBe(200);
    expect((await anonymous.post('/api/v1/auth/login', { email: person.email, password: PASSWORD })).status).toBe(401);

    const again = await verify(token);
    expect(again.status).toBe(400);
    expect(again.body.details).toEqual([{ path: 'token', message: 'is not a valid link' }]);
    expect(await eventsAbout('user.email.verified', person.id)).toHaveLength(1);
  });

  it('voids every other unused link of the person: the old address’s verification and reset links, too', async () => {
    const person = await unverifiedMember();
    const verification = await verificationLink(person);
    const reset = await (async () => {
      const before = smtp.received.filter((m) => m.to === person.email && /Reset your/.test(m.subject)).length;
      expect((await anonymous.post('/api/v1/auth/password-reset', { email: person.email })).status).toBe(202);
      const mails = await smtp.waitForMail(person.email, /Reset your/, before + 1);
      return smtp.linkIn(mails.at(-1)!, '/reset-password').searchParams.get('token')!;
    })();
    const next = newAddress('moved');
    const change = await changeLink(person, next);

    expect((await verify(change)).status).toBe(200);

    expect((await verify(verification)).status).toBe(400);
    const resetReply = await anonymous.post('/api/v1/auth/password-reset/confirm', {
      token: reset,
      password: 'a brand new password',
    });
    expect(resetReply.status).toBe(400);
    expect(resetReply.body.details).toEqual([{ path: 'token', message: expect.any(String) }]);
    expect(await server.base.db.linkToken.count({ where: { userId: person.id, endedAt: null } })).toBe(0);
    expect((await userRow(person.id)).emailVerified).toBe(true);
  });

  it('answers 409 when another account took the address after the link was sent, and changes nothing', async () => {
    const person = await freshMember();
    const next = newAddress('contested');
    const token = await changeLink(person, next);
    // Someone accepts an invitation to that address first.
    const invited = await tenant.owner.api.post(`/v1/organizations/${tenant.id}/invitations`, { email: next });
    const taker = await anonymous.post('/api/v1/invitations/accept', {
      token: invited.body.token,
      name: 'Taker',
      password: PASSWORD,
    });
    expect(taker.status).toBe(200);

    const reply = await verify(token);

    expect(reply.status).toBe(409);
    expect(reply.body.error).toBe('conflict');
    expect((await userRow(person.id)).email).toBe(person.email);
    expect(await eventsAbout('user.updated', person.id)).toEqual([]);
    expect(await auditAbout('user.email.change', person.id)).toEqual([]);
    // and no notice to the old address was queued: no mail row, so nothing for the worker to send later
    expect(await server.base.db.mail.count({ where: { toAddress: person.email, kind: 'email_changed' } })).toBe(0);
    expect(smtp.received.filter((m) => m.to === person.email && CHANGED.test(m.subject))).toEqual([]);
    // and the taken address no longer shows as pending, nor can a new link to it be asked for
    expect((await person.api.get('/api/v1/users/me')).body.pending_email).toBeNull();
    expect((await verify(token)).status).toBe(400);
    expect((await requestLink(person.api)).status).toBe(409);
  });

  it('withdraws a pending change when the current address is asked for again', async () => {
    const person = await freshMember();
    const token = await changeLink(person, newAddress('withdrawn'));
    const again = await askFor(person, person.email);
    expect(again.status).toBe(200);
    expect(again.body.pending_email).toBeNull();
    expect((await verify(token)).status).toBe(400);
    expect((await userRow(person.id)).email).toBe(person.email);
  });

  it('uses the newest link only: asking again for another address voids the first link', async () => {
    const person = await freshMember();
    const first = newAddress('first');
    const second = newAddress('second');
    const firstToken = await changeLink(person, first);
    const secondToken = await changeLink(person, second);
    expect((await person.api.get('/api/v1/users/me')).body.pending_email).toBe(second);

    expect((await verify(firstToken)).status).toBe(400);
    expect((await verify(secondToken)).status).toBe(200);
    expect((await userRow(person.id)).email).toBe(second);
  });
});

describe('POST /api/v1/auth/verify-email with a verification link', () => {
  it('sets email_verified, announces it once and audits it; the link works once', async () => {
    const person = await unverifiedMember();
    const token = await linkMailed(person.email, VERIFY, async () => {
      const asked = await requestLink(person.api);
      expect(asked.status).toBe(202);
      expectMatchesOpenApi('POST', '/api/v1/users/me/email/verify-request', asked);
      expect(asked.body).toEqual({ email: person.email });
    });

    const reply = await verify(token);

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expectMatchesOpenApi('POST', '/api/v1/auth/verify-email', reply);
    expect(reply.body).toMatchObject({ id: person.id, email: person.email, email_verified: true, pending_email: null });
    expect((await userRow(person.id)).emailVerified).toBe(true);
    expect(await eventsAbout('user.email.verified', person.id)).toHaveLength(1);
    expect(await auditAbout('user.email.verify', person.id)).toEqual([expect.objectContaining({ actorId: person.id })]);
    expect((await verify(token)).status).toBe(400);
    expect(await eventsAbout('user.email.verified', person.id)).toHaveLength(1);
  });

  it('announces nothing more for an address verified meanwhile, though the link still answers with the user', async () => {
    const person = await unverifiedMember();
    const token = await verificationLink(person);
    expect((await admin.patch(`/v1/users/${person.id}`, { email_verified: true })).status).toBe(200);

    const reply = await verify(token);

    expect(reply.status).toBe(200);
    expect(reply.body.email_verified).toBe(true);
    expect(await eventsAbout('user.email.verified', person.id)).toHaveLength(1);
    expect(await auditAbout('user.email.verify', person.id)).toEqual([]);
  });

  it('lets exactly one of 20 concurrent uses of one link through: the rest get 400, none a 500', async () => {
    for (const purpose of ['email_verification', 'email_change'] as const) {
      const person = purpose === 'email_verification' ? await unverifiedMember() : await freshMember();
      const next = newAddress('concurrent');
      const token = purpose === 'email_verification' ? await verificationLink(person) : await changeLink(person, next);

      const replies = await Promise.all(Array.from({ length: 20 }, () => verify(token)));

      const statuses = replies.map((r) => r.status).sort();
      expect(statuses, purpose).toEqual([200, ...Array(19).fill(400)]);
      expect(replies.filter((r) => r.status === 400).every((r) => r.body.details?.[0]?.path === 'token')).toBe(true);
      expect(await eventsAbout('user.email.verified', person.id), purpose).toHaveLength(1);
      if (purpose === 'email_change') {
        expect(await eventsAbout('user.updated', person.id)).toHaveLength(1);
        expect(await auditAbout('user.email.change', person.id)).toHaveLength(1);
        await smtp.waitForMail(person.email, CHANGED);
        expect(smtp.received.filter((m) => m.to === person.email && CHANGED.test(m.subject))).toHaveLength(1);
      }
    }
  });

  it('answers 400 on token for an unknown, malformed or NUL-bearing token, and the real link still works after', async () => {
    const person = await unverifiedMember();
    const token = await verificationLink(person);
    const onToken: unknown[] = [
      'tsv_not-a-real-token',
      `${token}\u0000`,
      `\u0000${token}`,
      '\u0000',
      token.slice(0, -1),
      token.toUpperCase(),
      '',
      'x'.repeat(201),
      `tsp_${token.slice(4)}`,
    ];
    for (const bad of onToken) {
      const reply = await verify(bad);
      expect(reply.status, JSON.stringify(bad)).toBe(400);
      expect(reply.body.error).toBe('invalid_request');
      expect(
        reply.body.details.map((d: { path: string }) => d.path),
        JSON.stringify(bad),
      ).toEqual(['token']);
    }
    for (const bad of [123, null, [token], { token }, true]) {
      const reply = await verify(bad);
      expect(reply.status, JSON.stringify(bad)).toBe(400);
      expect(reply.body.error).toBe('invalid_request');
    }
    const missing = await anonymous.post('/api/v1/auth/verify-email', {});
    expect(missing.status).toBe(400);
    expect(missing.body.details.map((d: { path: string }) => d.path)).toEqual(['token']);
    const extra = await anonymous.post('/api/v1/auth/verify-email', { token, email: 'someone@example.test' });
    expect(extra.status).toBe(400);
    expect(extra.body.details.map((d: { path: string }) => d.path)).toEqual(['email']);
    for (const body of ['not json', '{"token":', `"${token}"`, `[${JSON.stringify(token)}]`]) {
      const reply = await anonymous.post('/api/v1/auth/verify-email', body);
      expect(reply.status, body).toBe(400);
    }
    expect(
      (
        await anonymous.post('/api/v1/auth/verify-email', `token=${token}`, {
          'content-type': 'application/x-www-form-urlencoded',
        })
      ).status,
    ).toBe(415);

    expect((await userRow(person.id)).emailVerified).toBe(false);
    expect((await verify(token)).status).toBe(200);
  });
});

describe('POST /api/v1/users/me/email/verify-request', () => {
  it('mails a new link for the pending address when there is one, voiding the earlier one', async () => {
    const person = await freshMember();
    const next = newAddress('pending');
    const first = await changeLink(person, next);

    let asked: { status: number; body: unknown } | undefined;
    const second = await linkMailed(next, CHANGE, async () => (asked = await requestLink(person.api)));

    expect(asked).toMatchObject({ status: 202, body: { email: next } });
    expect((await verify(first)).status).toBe(400);
    expect((await verify(second)).status).toBe(200);
    expect((await userRow(person.id)).email).toBe(next);
  });

  it('of 5 concurrent requests, leaves only one link live; of two new addresses asked for at once, only one is pending', async () => {
    // given an unverified person who asks for a link five times at once
    const person = await unverifiedMember('asks-at-once');
    const replies = await Promise.all(Array.from({ length: 5 }, () => requestLink(person.api)));
    expect(replies.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);

    // then five links are mailed, and only one works
    const mails = await smtp.waitForMail(person.email, VERIFY, 5);
    expect(
      await server.base.db.linkToken.count({
        where: { userId: person.id, purpose: 'email_verification', endedAt: null },
      }),
    ).toBe(1);
    const used = await Promise.all(mails.map((m) => verify(smtp.linkIn(m, '/verify-email').searchParams.get('token'))));
    expect(used.map((r) => r.status).sort()).toEqual([200, 400, 400, 400, 400]);

    // and given a person who asks for two new addresses at once
    const other = await freshMember('changes-at-once');
    const wanted = [newAddress('either'), newAddress('or')];
    expect((await Promise.all(wanted.map((email) => askFor(other, email)))).map((r) => r.status)).toEqual([200, 200]);
    const tokens = await Promise.all(
      wanted.map(async (email) =>
        smtp.linkIn((await smtp.waitForMail(email, CHANGE))[0]!, '/verify-email').searchParams.get('token'),
      ),
    );

    // then one address is pending, and only its link works
    const live = await server.base.db.linkToken.findMany({
      where: { userId: other.id, purpose: 'email_change', endedAt: null },
    });
    expect(live).toHaveLength(1);
    expect((await other.api.get('/api/v1/users/me')).body.pending_email).toBe(live[0]!.email);
    const results = await Promise.all(tokens.map((token) => verify(token)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
    expect((await userRow(other.id)).email).toBe(live[0]!.email);
  });

  it('mails the current address when it is unverified and nothing is pending', async () => {
    const person = await unverifiedMember();
    const before = smtp.received.length;

    const token = await linkMailed(person.email, VERIFY, async () =>
      expect((await requestLink(person.api)).body).toEqual({ email: person.email }),
    );

    expect(
      smtp.received
        .slice(before)
        .filter((m) => VERIFY.test(m.subject) || CHANGE.test(m.subject))
        .map((m) => m.to),
    ).toEqual([person.email]);
    expect((await verify(token)).status).toBe(200);
  });

  it('answers 409 conflict when the address is verified and nothing is pending, and mails nothing', async () => {
    const person = await freshMember();

    const reply = await requestLink(person.api);

    expect(reply.status).toBe(409);
    expect(reply.body.error).toBe('conflict');
    expectMatchesOpenApi('POST', '/api/v1/users/me/email/verify-request', reply);
    expect(
      await server.base.db.mail.count({
        where: { toAddress: person.email, kind: { in: ['email_verification', 'email_change'] } },
      }),
    ).toBe(0);
  });

  it('needs a person signed in to the service: 401 anonymous, 403 for an API key or an OAuth access token, even with the api scope', async () => {
    const person = await unverifiedMember();
    expect((await requestLink(anonymous)).status).toBe(401);
    const key = await tenant.owner.api.post('/api/v1/api-keys', { name: 'no mail' });
    expect(key.status).toBe(201);
    const byKey = await requestLink(client(server.url, { apiKey: { key: key.body.key, secret: key.body.secret } }));
    expect(byKey.status).toBe(403);
    const app = await registerClient(tenant.owner.api, {
      name: 'Mail sender?',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid', 'email', 'profile', 'api'],
      consent_required: false,
    });
    const profileOnly = await codeFlow(person, app, 'openid email profile');
    const withApi = await codeFlow(person, app, 'openid api');

    const byProfileToken = await requestLink(client(server.url, { token: profileOnly.access_token }));
    const byApiToken = await requestLink(client(server.url, { token: withApi.access_token }));

    expect(byProfileToken.status).toBe(403);
    expect(byProfileToken.body.error).toBe('insufficient_scope');
    // The api scope lets a token act as its person, but not mail it: that takes the person's own session.
    expect(byApiToken.status).toBe(403);
    expect(byApiToken.body.error).toBe('forbidden');
    expectMatchesOpenApi('POST', '/api/v1/users/me/email/verify-request', byApiToken);
    expect(await server.base.db.mail.count({ where: { toAddress: person.email, kind: 'email_verification' } })).toBe(0);
  });
});

describe('where an address starts verified', () => {
  it('starts an account made by accepting an invitation verified: the link reached the address', async () => {
    const person = await freshMember();
    expect((await person.api.get('/api/v1/users/me')).body.email_verified).toBe(true);
    expect((await userRow(person.id)).emailVerified).toBe(true);
    expect((await eventsAbout('user.created', person.id)).map((d) => d.user.emailVerified)).toEqual([true]);
  });
});

/** The tokens of a code flow of `app` for `person` (signed in with the fixtures' password), and the ID token's claims. */
async function codeFlow(person: { email: string }, app: RegisteredClient, scope: string) {
  const session = await sessionOf(server.url, person);
  const back = await authorize(server.url, session, {
    client_id: app.client_id,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope,
    nonce: 'n',
    state: 's',
  });
  const tokens = await exchangeCode(server.url, app, codeFrom(back), REDIRECT);
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  const claims = JSON.parse(Buffer.from(tokens.body.id_token.split('.')[1], 'base64url').toString());
  return { access_token: tokens.body.access_token as string, claims };
}

describe('email_verified in ID tokens and userinfo', () => {
  it('follows verification and the change of address', async () => {
    const person = await unverifiedMember('oidc');
    const app = await registerClient(tenant.owner.api, {
      name: 'Reads the address',
      redirect_uris: [REDIRECT],
      allowed_scopes: ['openid', 'email'],
      consent_required: false,
    });
    const userinfo = async (token: string) => (await client(server.url, { token }).get('/oauth/userinfo')).body;

    const before = await codeFlow(person, app, 'openid email');
    expect(before.claims).toMatchObject({ email: person.email, email_verified: false });
    expect(await userinfo(before.access_token)).toMatchObject({ email: person.email, email_verified: false });

    expect((await verify(await verificationLink(person))).status).toBe(200);
    expect(await userinfo(before.access_token)).toMatchObject({ email: person.email, email_verified: true });
    expect((await codeFlow(person, app, 'openid email')).claims).toMatchObject({
      email: person.email,
      email_verified: true,
    });

    const next = newAddress('oidc-moved');
    const token = await changeLink(person, next);
    expect(await userinfo(before.access_token)).toMatchObject({ email: person.email, email_verified: true });
    expect((await verify(token)).status).toBe(200);
    expect(await userinfo(before.access_token)).toMatchObject({ email: next, email_verified: true });
    expect((await codeFlow({ email: next }, app, 'openid email')).claims).toMatchObject({
      email: next,
      email_verified: true,
    });
  });
});

// Moves the shared clock: keep this block last.
describe('time', () => {
  it('honours a link for 24 hours, no longer; a pending address lapses with its link', async () => {
    const early = await unverifiedMember('early');
    const late = await unverifiedMember('late');
    const mover = await freshMember('mover');
    const earlyToken = await verificationLink(early);
    const lateToken = await verificationLink(late);
    const changeToken = await changeLink(mover, newAddress('lapsing'));

    clock.advance(DAY - MINUTE);
    expect((await verify(earlyToken)).status).toBe(200);

    clock.advance(2 * MINUTE);
    const expired = await verify(lateToken);
    expect(expired.status).toBe(400);
    expect(expired.body.details).toEqual([{ path: 'token', message: 'is not a valid link' }]);
    expect((await userRow(late.id)).emailVerified).toBe(false);
    expect((await mover.api.get('/api/v1/users/me')).body.pending_email).toBeNull();
    expect((await verify(changeToken)).status).toBe(400);
    expect((await userRow(mover.id)).email).toBe(mover.email);
    // A new link works.
    expect((await verify(await verificationLink(late))).status).toBe(200);
  });

  it('mails at most 5 links an hour to one person (429), not counting anyone else', async () => {
    const person = await unverifiedMember('eager');
    const other = await unverifiedMember('patient');

    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await requestLink(person.api)).status);

    expect(statuses).toEqual([202, 202, 202, 202, 202, 429]);
    const refused = await requestLink(person.api);
    expect(refused.status).toBe(429);
    expectMatchesOpenApi('POST', '/api/v1/users/me/email/verify-request', refused);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await requestLink(other.api)).status).toBe(202);
    await smtp.waitForMail(person.email, VERIFY, 5);
    expect(smtp.received.filter((m) => m.to === person.email && VERIFY.test(m.subject))).toHaveLength(5);

    clock.advance(3600 + MINUTE);
    const token = await verificationLink(person);
    expect((await verify(token)).status).toBe(200);
  });

  it('counts each new address asked for against the same 5 an hour, so that one address after another floods no inbox', async () => {
    // given a person who asked for five new addresses in turn, each mailed a link
    const person = await freshMember('hopper');
    const asked = Array.from({ length: 6 }, () => newAddress('hop'));
    for (const email of asked.slice(0, 5)) await changeLink(person, email);

    // when they ask for a sixth
    const refused = await askFor(person, asked[5]!);

    // then it is refused with 429 and Retry-After, the sixth address is neither mailed nor pending, the fifth still is
    expect(refused.status, JSON.stringify(refused.body)).toBe(429);
    expect(refused.body.error).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expectMatchesOpenApi('PATCH', '/api/v1/users/me', refused);
    expect(await server.base.db.mail.count({ where: { toAddress: asked[5]! } })).toBe(0);
    expect((await person.api.get('/api/v1/users/me')).body).toMatchObject({
      email: person.email,
      pending_email: asked[4],
    });
    // and asking for the pending address's link again is refused too: one count for both
    expect((await requestLink(person.api)).status).toBe(429);
    // while withdrawing the pending change, which mails nothing, is not refused
    expect((await askFor(person, person.email)).status).toBe(200);
    expect((await person.api.get('/api/v1/users/me')).body.pending_email).toBeNull();
  });
});
