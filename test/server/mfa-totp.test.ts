// The authenticator app as a second factor (docs/architecture.md#second-factors): enrolment (pending until a code
// confirms it, the secret stored encrypted), ten single-use recovery codes, codes accepted in their step and one on
// each side and only once, the sign-in's second step (POST /api/v1/auth/login/mfa), removal and a new set of recovery
// codes with a fresh proof. Codes are computed with otpauth at the server clock's time, which the tests move.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Client, type Reply } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { movableClock, MINUTE } from '../helpers/clock.ts';
import { waitForMailRow } from '../helpers/mail.ts';
import { accessTokenOf, authorize, codeFrom, exchangeCode, registerClient } from '../helpers/oauth.ts';
import { waitFor } from '../helpers/wait.ts';
import * as totp from '../helpers/totp.ts';
import { PERIOD, type Enrolled } from '../helpers/totp.ts';

const clock = movableClock();
let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer({ clock });
  const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
  tenant = await createTenant(server.url, api);
});
afterAll(() => server?.stop());

// Every request comes from 127.0.0.1, whose sign-in throttle the wrong codes of one test would otherwise carry into
// the next: each test starts after the 15-minute window of those before it.
beforeEach(() => clock.advance(16 * MINUTE));

/** Someone new, so that a test's factors, codes and throttle touch no one else's. */
const newPerson = (): Promise<Person> => addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'mfa');

const toMidStep = (steps = 1) => totp.toMidStep(clock, steps);
const codeAt = (secret: string, offsetSeconds = 0) => totp.codeAt(clock, secret, offsetSeconds);
const wrongCode = (secret: string) => totp.wrongCode(clock, secret);
const enrol = (api: Client) => totp.enrolTotp(api, clock);

/** A new person with the authenticator app set up. */
async function enrolledPerson(): Promise<Person & Enrolled> {
  const person = await newPerson();
  return { ...person, ...(await enrol(person.api)) };
}

const passwordLogin = (person: { email: string }, password = PASSWORD) =>
  client(server.url).post('/api/v1/auth/login', { email: person.email, password });

/** The sign-in's first step for an account with a factor: the mfa_token. */
async function challenge(person: { email: string }): Promise<string> {
  const reply = await passwordLogin(person);
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  expect(reply.body.mfa_required).toBe(true);
  return reply.body.mfa_token;
}

const completeLogin = (body: unknown) => client(server.url).post('/api/v1/auth/login/mfa', body);

const sessionsOf = (userId: string) => server.base.db.session.count({ where: { userId } });
const eventsOf = (kind: string, userId: string) =>
  server.base.db.event.count({ where: { kind, body: { contains: userId } } });
const auditsOf = (action: string, userId: string) =>
  server.base.db.auditLog.count({ where: { action, targetId: userId } });
const statusCounts = (replies: Reply[]) =>
  replies.reduce<Record<number, number>>((n, r) => ({ ...n, [r.status]: (n[r.status] ?? 0) + 1 }), {});

describe('POST /api/v1/users/me/mfa/totp', () => {
  it('answers the secret, its otpauth URL and a QR code; stores the secret encrypted, pending until confirmed', async () => {
    const person = await newPerson();
    const reply = await person.api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    const { secret, otpauth_url: url, qr_svg: svg } = reply.body;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const otpauth = new URL(url);
    expect(otpauth.protocol).toBe('otpauth:');
    expect(url.startsWith('otpauth://totp/')).toBe(true);
    expect(otpauth.searchParams.get('secret')).toBe(secret);
    expect(otpauth.searchParams.get('issuer')).toBe(new URL(server.url).host);
    expect(decodeURIComponent(otpauth.pathname)).toContain(person.email);
    expect(svg.trimStart()).toMatch(/^<svg[\s>]/);

    // The row holds the secret encrypted only.
    const row = await server.base.db.totpFactor.findUniqueOrThrow({ where: { userId: person.id } });
    expect(row.confirmedAt).toBeNull();
    expect(row.secretEncrypted).not.toContain(secret);
    expect(row.secretEncrypted.toLowerCase()).not.toContain(secret.toLowerCase());

    expect((await person.api.get('/api/v1/users/me/mfa')).body).toEqual({
      totp: false,
      totp_pending: true,
      passkeys: 0,
      recovery_codes_left: 0,
    });
    // A pending app is no factor yet: the password alone still signs in.
    const login = await passwordLogin(person);
    expect(login.status).toBe(200);
    expect(login.body.token).toEqual(expect.any(String));
    expect(login.body.mfa_required).toBeUndefined();
  });

  it('starts again with a new secret while pending; the old secret confirms nothing', async () => {
    const person = await newPerson();
    const first = (await person.api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD })).body.secret;
    const second = await person.api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD });
    expect(second.status).toBe(201);
    expect(second.body.secret).not.toBe(first);
    toMidStep();
    const stale = codeAt(first);
    if (![-PERIOD, 0, PERIOD].some((o) => codeAt(second.body.secret, o) === stale)) {
      expect((await person.api.post('/api/v1/users/me/mfa/totp/confirm', { code: stale })).status).toBe(401);
    }
    expect(
      (await person.api.post('/api/v1/users/me/mfa/totp/confirm', { code: codeAt(second.body.secret) })).status,
    ).toBe(200);
  });

  it('answers 409 once an authenticator app is set up, and leaves it as it is', async () => {
    const person = await enrolledPerson();
    const again = await person.api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');
    toMidStep();
    expect((await completeLogin({ mfa_token: await challenge(person), code: codeAt(person.secret) })).status).toBe(200);
  });
});

describe('POST /api/v1/users/me/mfa/totp/confirm', () => {
  it('refuses a wrong code with 401, then takes the right one: ten distinct recovery codes, 2fa.enabled once, audited and mailed', async () => {
    const person = await newPerson();
    const { secret } = (await person.api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD })).body;
    toMidStep();

    const wrong = await person.api.post('/api/v1/users/me/mfa/totp/confirm', { code: wrongCode(secret) });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_credentials');
    expect((await person.api.get('/api/v1/users/me/mfa')).body).toMatchObject({ totp: false, totp_pending: true });

    const right = await person.api.post('/api/v1/users/me/mfa/totp/confirm', { code: codeAt(secret) });
    expect(right.status, JSON.stringify(right.body)).toBe(200);
    const codes: string[] = right.body.recovery_codes;
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/);
    // Stored hashed: no row holds a code as it was shown.
    const stored = await server.base.db.recoveryCode.findMany({ where: { userId: person.id } });
    expect(stored).toHaveLength(10);
    for (const row of stored)
      expect(codes.some((c) => row.codeHash.includes(c) || row.codeHash.includes(c.replace(/-/g, '')))).toBe(false);

    expect((await person.api.get('/api/v1/users/me/mfa')).body).toEqual({
      totp: true,
      totp_pending: false,
      passkeys: 0,
      recovery_codes_left: 10,
    });
    expect(await eventsOf('2fa.enabled', person.id)).toBe(1);
    expect(await auditsOf('mfa.totp.enable', person.id)).toBe(1);
    const mail = await waitForMailRow(server.base.db, person.email);
    expect(mail.kind).toBe('second_factor_changed');

    // Confirming again changes nothing.
    toMidStep();
    expect((await person.api.post('/api/v1/users/me/mfa/totp/confirm', { code: codeAt(secret) })).status).toBe(409);
    expect(await eventsOf('2fa.enabled', person.id)).toBe(1);
  });

  it('confirms once when 20 confirmations with the right code arrive at once: one set of codes, one event', async () => {
    const person = await newPerson();
    const { secret } = (await person.api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD })).body;
    toMidStep();
    const code = codeAt(secret);
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => person.api.post('/api/v1/users/me/mfa/totp/confirm', { code })),
    );
    const counts = statusCounts(replies);
    expect(counts[200], JSON.stringify(counts)).toBe(1);
    expect(
      Object.keys(counts).every((s) => ['200', '401', '409'].includes(s)),
      JSON.stringify(counts),
    ).toBe(true);
    const issued = replies.find((r) => r.status === 200)!.body.recovery_codes;
    const stored = await server.base.db.recoveryCode.count({ where: { userId: person.id } });
    expect(stored).toBe(10);
    expect(await eventsOf('2fa.enabled', person.id)).toBe(1);
    expect(await auditsOf('mfa.totp.enable', person.id)).toBe(1);
    // The codes answered are the ones that work.
    expect((await completeLogin({ mfa_token: await challenge(person), recovery_code: issued[0] })).status).toBe(200);
  });

  it('answers 409 when no app is being set up', async () => {
    const person = await newPerson();
    const reply = await person.api.post('/api/v1/users/me/mfa/totp/confirm', { code: '123456' });
    expect(reply.status).toBe(409);
    expect(await server.base.db.totpFactor.count({ where: { userId: person.id } })).toBe(0);
  });

  it('the code that confirmed the app does not sign in', async () => {
    const person = await newPerson();
    const { secret } = (await person.api.post('/api/v1/users/me/mfa/totp', { password: PASSWORD })).body;
    toMidStep();
    const code = codeAt(secret);
    expect((await person.api.post('/api/v1/users/me/mfa/totp/confirm', { code })).status).toBe(200);
    const token = await challenge(person);
    expect((await completeLogin({ mfa_token: token, code })).status).toBe(401);
    toMidStep();
    expect((await completeLogin({ mfa_token: token, code: codeAt(secret) })).status).toBe(200);
  });
});

describe('codes of the authenticator app', () => {
  it('accepts the step now and one on each side, each once, and refuses two steps away', async () => {
    const person = await enrolledPerson();
    toMidStep(3);
    const token = await challenge(person);
    // Two steps away on either side: refused, and the token stays for another try.
    expect((await completeLogin({ mfa_token: token, code: codeAt(person.secret, -2 * PERIOD) })).status).toBe(401);
    expect((await completeLogin({ mfa_token: token, code: codeAt(person.secret, 2 * PERIOD) })).status).toBe(401);
    // One step behind.
    const behind = codeAt(person.secret, -PERIOD);
    expect((await completeLogin({ mfa_token: token, code: behind })).status).toBe(200);
    // This step.
    const now = codeAt(person.secret);
    expect((await completeLogin({ mfa_token: await challenge(person), code: now })).status).toBe(200);
    // One step ahead.
    const ahead = codeAt(person.secret, PERIOD);
    expect((await completeLogin({ mfa_token: await challenge(person), code: ahead })).status).toBe(200);
    // Each once; and a code older than one accepted is refused too.
    for (const used of [ahead, now, behind]) {
      const reply = await completeLogin({ mfa_token: await challenge(person), code: used });
      expect(reply.status, used).toBe(401);
      expect(reply.body.error).toBe('invalid_credentials');
    }
  });

  it('a code used at sign-in is refused at a second sign-in in the same step', async () => {
    const person = await enrolledPerson();
    toMidStep();
    const code = codeAt(person.secret);
    expect((await completeLogin({ mfa_token: await challenge(person), code })).status).toBe(200);
    const before = await sessionsOf(person.id);
    expect((await completeLogin({ mfa_token: await challenge(person), code })).status).toBe(401);
    expect(await sessionsOf(person.id)).toBe(before);
  });
});

describe('POST /api/v1/auth/login for an account with a second factor', () => {
  it('answers an MFA challenge, with no session and no cookie', async () => {
    const person = await enrolledPerson();
    const before = await sessionsOf(person.id);
    const started = clock.now().getTime();
    const reply = await passwordLogin(person);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({
      mfa_required: true,
      mfa_token: expect.stringMatching(/^\S{32,}$/),
      methods: ['totp', 'recovery_code'],
      expires_at: expect.any(String),
    });
    const expiresIn = Date.parse(reply.body.expires_at) - started;
    expect(expiresIn).toBeGreaterThan(5 * MINUTE * 1000 - 5000);
    expect(expiresIn).toBeLessThanOrEqual(5 * MINUTE * 1000 + 5000);
    expect(reply.headers.get('set-cookie')).toBeNull();
    expect(await sessionsOf(person.id)).toBe(before);
    // The token is no session.
    expect((await client(server.url, { token: reply.body.mfa_token }).get('/api/v1/auth/session')).status).toBe(401);
  });

  it('still refuses a wrong password with 401 and no token', async () => {
    const person = await enrolledPerson();
    const reply = await passwordLogin(person, 'not the password');
    expect(reply.status).toBe(401);
    expect(reply.body.mfa_token).toBeUndefined();
  });
});

describe('POST /api/v1/auth/login/mfa', () => {
  it('completes the sign-in with a code: the login payload, a session cookie and a session that used two factors', async () => {
    const person = await enrolledPerson();
    const before = await sessionsOf(person.id);
    const token = await challenge(person);
    toMidStep();
    const reply = await completeLogin({ mfa_token: token, code: codeAt(person.secret) });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({
      token: expect.any(String),
      token_type: 'Bearer',
      user: { id: person.id, email: person.email },
      organization: { id: tenant.id },
    });
    expect(reply.body.mfa_enrollment_required).toBeUndefined();
    expect(reply.headers.get('set-cookie')).toMatch(/^tessera_session=[^;]+;/);
    expect(await sessionsOf(person.id)).toBe(before + 1);
    expect((await client(server.url, { token: reply.body.token }).get('/api/v1/users/me')).body.id).toBe(person.id);
    const session = await server.base.db.session.findFirstOrThrow({
      where: { userId: person.id },
      orderBy: { createdAt: 'desc' },
    });
    expect([...session.amr].sort()).toEqual(['mfa', 'otp', 'pwd']);
    const audit = await server.base.db.auditLog.findFirstOrThrow({
      where: { action: 'auth.login', targetId: person.id, outcome: 'success' },
      orderBy: { createdAt: 'desc' },
    });
    expect(audit.details).toMatchObject({ amr: ['pwd', 'otp', 'mfa'] });

    // The token works once.
    toMidStep();
    const again = await completeLogin({ mfa_token: token, code: codeAt(person.secret) });
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_request');
    expect(await sessionsOf(person.id)).toBe(before + 1);
  });

  it('refuses a token past its 5 minutes with 400', async () => {
    const person = await enrolledPerson();
    const token = await challenge(person);
    clock.advance(5 * MINUTE + 1);
    toMidStep();
    const reply = await completeLogin({ mfa_token: token, code: codeAt(person.secret) });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe('invalid_request');
    // The code was not spent: a new sign-in takes it.
    expect((await completeLogin({ mfa_token: await challenge(person), code: codeAt(person.secret) })).status).toBe(200);
  });

  it("refuses one person's token with another's code, which stays usable by its owner", async () => {
    const a = await enrolledPerson();
    const b = await enrolledPerson();
    toMidStep();
    const tokenOfA = await challenge(a);
    const codeOfB = codeAt(b.secret);
    if ([-PERIOD, 0, PERIOD].some((o) => codeAt(a.secret, o) === codeOfB)) return; // one chance in 300,000
    const before = await sessionsOf(a.id);
    expect((await completeLogin({ mfa_token: tokenOfA, code: codeOfB })).status).toBe(401);
    expect(await sessionsOf(a.id)).toBe(before);
    expect((await completeLogin({ mfa_token: await challenge(b), code: codeOfB })).status).toBe(200);
    // A's token was not used up by the wrong code.
    expect((await completeLogin({ mfa_token: tokenOfA, code: codeAt(a.secret) })).status).toBe(200);
  });

  it('counts wrong codes against the sign-in throttle: after 5, even the right code is refused with 429', async () => {
    const person = await enrolledPerson();
    toMidStep();
    const token = await challenge(person);
    for (let i = 0; i < 5; i++) {
      const reply = await completeLogin({ mfa_token: token, code: wrongCode(person.secret) });
      expect(reply.status, `wrong code ${i + 1}`).toBe(401);
    }
    const right = await completeLogin({ mfa_token: token, code: codeAt(person.secret) });
    expect(right.status).toBe(429);
    expect(right.body.error).toBe('rate_limited');
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await passwordLogin(person)).status).toBe(429);
    expect(
      await server.base.db.auditLog.count({
        where: { action: 'auth.login.mfa', outcome: 'failure', targetId: person.id },
      }),
    ).toBe(5);
  });

  it('a right password between wrong codes does not clear their count', async () => {
    const person = await enrolledPerson();
    toMidStep();
    for (let i = 0; i < 4; i++)
      expect((await completeLogin({ mfa_token: await challenge(person), code: wrongCode(person.secret) })).status).toBe(
        401,
      );
    // The password again (right, so answered with a new challenge), and a fifth wrong code: the account is locked.
    const token = await challenge(person);
    expect((await completeLogin({ mfa_token: token, code: wrongCode(person.secret) })).status).toBe(401);
    expect((await completeLogin({ mfa_token: token, code: codeAt(person.secret) })).status).toBe(429);
  });

  it('signs in with a recovery code once, whatever its case and spacing', async () => {
    const person = await enrolledPerson();
    const [code] = person.recoveryCodes;
    const typed = ` ${code!.toUpperCase().replace(/-/g, ' ')} `;
    const reply = await completeLogin({ mfa_token: await challenge(person), recovery_code: typed });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.headers.get('set-cookie')).toMatch(/^tessera_session=/);
    const session = await server.base.db.session.findFirstOrThrow({
      where: { userId: person.id },
      orderBy: { createdAt: 'desc' },
    });
    expect(session.amr).toContain('mfa');
    expect(
      (await client(server.url, { token: reply.body.token }).get('/api/v1/users/me/mfa')).body.recovery_codes_left,
    ).toBe(9);
    const again = await completeLogin({ mfa_token: await challenge(person), recovery_code: code });
    expect(again.status).toBe(401);
    expect(again.body.error).toBe('invalid_credentials');
    // Another one of the set still works.
    expect(
      (await completeLogin({ mfa_token: await challenge(person), recovery_code: person.recoveryCodes[1] })).status,
    ).toBe(200);
  });

  it('20 sign-ins at once with one recovery code, each with its own mfa_token: exactly one succeeds', async () => {
    const person = await enrolledPerson();
    const tokens: string[] = [];
    for (let i = 0; i < 20; i++) tokens.push(await challenge(person));
    expect(new Set(tokens).size).toBe(20);
    // 20 devices signing in at once hold 20 live tokens. Where issuing a token voids the person's earlier ones (a
    // token stored as a link token), they are made live again, so that the recovery code alone decides.
    await server.base.db.linkToken.updateMany({
      where: { userId: person.id, purpose: 'mfa' },
      data: { endedAt: null },
    });
    const before = await sessionsOf(person.id);
    const code = person.recoveryCodes[0];
    const replies = await Promise.all(tokens.map((mfa_token) => completeLogin({ mfa_token, recovery_code: code })));
    const counts = statusCounts(replies);
    expect(counts[200], JSON.stringify(counts)).toBe(1);
    expect(
      Object.keys(counts).every((s) => ['200', '401', '429'].includes(s)),
      JSON.stringify(counts),
    ).toBe(true);
    expect(await sessionsOf(person.id)).toBe(before + 1);
    expect(await server.base.db.recoveryCode.count({ where: { userId: person.id, usedAt: { not: null } } })).toBe(1);
  });

  it('20 uses at once of one mfa_token with a right code: exactly one succeeds, the others 400', async () => {
    const person = await enrolledPerson();
    toMidStep();
    const token = await challenge(person);
    const before = await sessionsOf(person.id);
    const code = codeAt(person.secret);
    const replies = await Promise.all(Array.from({ length: 20 }, () => completeLogin({ mfa_token: token, code })));
    expect(statusCounts(replies)).toEqual({ 200: 1, 400: 19 });
    expect(await sessionsOf(person.id)).toBe(before + 1);
  });

  it('answers 400, never 500, to NUL bytes, huge strings and wrong types', async () => {
    const person = await enrolledPerson();
    const token = await challenge(person);
    const bodies: unknown[] = [
      {},
      { mfa_token: token },
      { mfa_token: token, code: '123456', recovery_code: 'aaaa-bbbb-cccc-dddd' },
      { code: '123456' },
      { mfa_token: `${token}\u0000`, code: '123456' },
      { mfa_token: token, code: '12\u00003456' },
      { mfa_token: token, recovery_code: 'aaaa\u0000bbbb' },
      { mfa_token: 'x'.repeat(50_000), code: '123456' },
      { mfa_token: token, code: '1'.repeat(50_000) },
      { mfa_token: token, recovery_code: 'a'.repeat(50_000) },
      { mfa_token: 123, code: '123456' },
      { mfa_token: token, code: 123456 },
      { mfa_token: [token], code: '123456' },
      { mfa_token: token, code: { $ne: null } },
      { mfa_token: token, recovery_code: true },
      { mfa_token: null, code: null },
    ];
    for (const body of bodies) {
      const reply = await completeLogin(body);
      expect(reply.status, JSON.stringify(body).slice(0, 120)).toBe(400);
    }
    for (const raw of ['[]', '"text"', 'null', '{"mfa_token":', '42']) {
      const reply = await client(server.url).post('/api/v1/auth/login/mfa', raw);
      expect(reply.status, raw).toBe(400);
    }
    // None of them spent the token.
    toMidStep();
    expect((await completeLogin({ mfa_token: token, code: codeAt(person.secret) })).status).toBe(200);
  });
});

describe('DELETE /api/v1/users/me/mfa/totp', () => {
  it('needs a proof: none 400, a wrong password 401, the right one removes the app, its codes, and emits 2fa.disabled', async () => {
    const person = await enrolledPerson();
    const none = await person.api.delete('/api/v1/users/me/mfa/totp', {});
    expect(none.status).toBe(400);
    expect(none.body.error).toBe('invalid_request');
    expect((await person.api.delete('/api/v1/users/me/mfa/totp')).status).toBe(400);
    const wrong = await person.api.delete('/api/v1/users/me/mfa/totp', { password: 'not the password' });
    expect(wrong.status).toBe(401);
    expect((await person.api.get('/api/v1/users/me/mfa')).body.totp).toBe(true);
    expect(await eventsOf('2fa.disabled', person.id)).toBe(0);

    const removed = await person.api.delete('/api/v1/users/me/mfa/totp', { password: PASSWORD });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(removed.body).toEqual({ totp: false, totp_pending: false, passkeys: 0, recovery_codes_left: 0 });
    expect(await server.base.db.totpFactor.count({ where: { userId: person.id } })).toBe(0);
    expect(await server.base.db.recoveryCode.count({ where: { userId: person.id } })).toBe(0);
    expect(await eventsOf('2fa.disabled', person.id)).toBe(1);
    expect(await auditsOf('mfa.totp.remove', person.id)).toBe(1);
    // Mailed: the app set up, then removed.
    await waitFor(async () =>
      (await server.base.db.mail.count({ where: { toAddress: person.email, kind: 'second_factor_changed' } })) === 2
        ? true
        : undefined,
    );

    // The password alone signs in again.
    const login = await passwordLogin(person);
    expect(login.status).toBe(200);
    expect(login.body.token).toEqual(expect.any(String));
    expect(login.body.mfa_required).toBeUndefined();
  });

  it('takes a fresh code as the proof, once', async () => {
    const person = await enrolledPerson();
    toMidStep();
    const code = codeAt(person.secret);
    // Spent at a sign-in first: refused here.
    expect((await completeLogin({ mfa_token: await challenge(person), code })).status).toBe(200);
    expect((await person.api.delete('/api/v1/users/me/mfa/totp', { code })).status).toBe(401);
    expect((await person.api.delete('/api/v1/users/me/mfa/totp', { code: wrongCode(person.secret) })).status).toBe(401);
    toMidStep();
    const removed = await person.api.delete('/api/v1/users/me/mfa/totp', { code: codeAt(person.secret) });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(removed.body.totp).toBe(false);
    expect(await eventsOf('2fa.disabled', person.id)).toBe(1);
  });
});

describe('a code given as the proof of a change', () => {
  it('counts wrong codes against the sign-in throttle: after 5, even the right code is refused with 429', async () => {
    const person = await enrolledPerson();
    toMidStep();
    for (let i = 0; i < 5; i++) {
      const reply = await person.api.delete('/api/v1/users/me/mfa/totp', { code: wrongCode(person.secret) });
      expect(reply.status, `wrong code ${i + 1}`).toBe(401);
    }
    const right = await person.api.delete('/api/v1/users/me/mfa/totp', { code: codeAt(person.secret) });
    expect(right.status, JSON.stringify(right.body)).toBe(429);
    expect(
      (await person.api.post('/api/v1/users/me/mfa/recovery-codes', { code: codeAt(person.secret, PERIOD) })).status,
    ).toBe(429);
    expect((await person.api.get('/api/v1/users/me/mfa')).body.totp).toBe(true);
    expect(await eventsOf('2fa.disabled', person.id)).toBe(0);
  });
});

describe('removing the app 20 times at once', () => {
  it('removes it once: 2fa.disabled and the audit entry once', async () => {
    const person = await enrolledPerson();
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => person.api.delete('/api/v1/users/me/mfa/totp', { password: PASSWORD })),
    );
    expect(
      replies.every((r) => r.status === 200),
      JSON.stringify(statusCounts(replies)),
    ).toBe(true);
    expect(await eventsOf('2fa.disabled', person.id)).toBe(1);
    expect(await auditsOf('mfa.totp.remove', person.id)).toBe(1);
    expect(await server.base.db.totpFactor.count({ where: { userId: person.id } })).toBe(0);
  });
});

describe('POST /api/v1/users/me/mfa/recovery-codes', () => {
  it('makes a new set with a proof; the old codes stop working', async () => {
    const person = await enrolledPerson();
    expect((await person.api.post('/api/v1/users/me/mfa/recovery-codes', {})).status).toBe(400);
    expect((await person.api.post('/api/v1/users/me/mfa/recovery-codes', { password: 'wrong' })).status).toBe(401);
    const reply = await person.api.post('/api/v1/users/me/mfa/recovery-codes', { password: PASSWORD });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const fresh: string[] = reply.body.recovery_codes;
    expect(fresh).toHaveLength(10);
    expect(new Set(fresh).size).toBe(10);
    expect(fresh.filter((c) => person.recoveryCodes.includes(c))).toEqual([]);
    expect(await auditsOf('mfa.recovery_codes.regenerate', person.id)).toBe(1);
    // No factor was turned on or off.
    expect(await eventsOf('2fa.enabled', person.id)).toBe(1);
    expect(await eventsOf('2fa.disabled', person.id)).toBe(0);

    expect(
      (await completeLogin({ mfa_token: await challenge(person), recovery_code: person.recoveryCodes[0] })).status,
    ).toBe(401);
    expect((await completeLogin({ mfa_token: await challenge(person), recovery_code: fresh[0] })).status).toBe(200);

    // A code works as the proof too.
    toMidStep();
    const byCode = await person.api.post('/api/v1/users/me/mfa/recovery-codes', { code: codeAt(person.secret) });
    expect(byCode.status).toBe(200);
    expect((await completeLogin({ mfa_token: await challenge(person), recovery_code: fresh[1] })).status).toBe(401);
  });

  it('answers 409 without a second factor (400 first without a proof)', async () => {
    const person = await newPerson();
    expect((await person.api.post('/api/v1/users/me/mfa/recovery-codes', {})).status).toBe(400);
    const reply = await person.api.post('/api/v1/users/me/mfa/recovery-codes', { password: PASSWORD });
    expect(reply.status).toBe(409);
    expect(await server.base.db.recoveryCode.count({ where: { userId: person.id } })).toBe(0);
  });
});

describe('only a session manages second factors', () => {
  it('refuses an API key and an OAuth access token at every route, creating nothing', async () => {
    const person = await enrolledPerson();
    const created = await tenant.admin.api.post('/api/v1/api-keys', { name: 'mfa probe' });
    expect(created.status).toBe(201);
    const key = client(server.url, { apiKey: { key: created.body.key, secret: created.body.secret } });
    const app = await registerClient(tenant.owner.api, {
      name: 'mfa app',
      redirect_uris: ['https://app.example.test/cb'],
      allowed_scopes: ['openid', 'api'],
      consent_required: false,
    });
    // The token is the enrolled person's: a full sign-in first, then the code flow with that session.
    const token = client(server.url, { token: await tokenOfEnrolled(person, app) });
    const newcomer = await newPerson();
    const tokenOfNewcomer = client(server.url, {
      token: await accessTokenOf(server.url, newcomer, app, 'https://app.example.test/cb', 'openid api'),
    });
    toMidStep();
    for (const [who, as] of [
      ['API key', key],
      ['access token', token],
      ['access token of a person without a factor', tokenOfNewcomer],
    ] as const) {
      const replies = {
        status: await as.get('/api/v1/users/me/mfa'),
        enrol: await as.post('/api/v1/users/me/mfa/totp', { password: PASSWORD }),
        confirm: await as.post('/api/v1/users/me/mfa/totp/confirm', { code: codeAt(person.secret) }),
        remove: await as.delete('/api/v1/users/me/mfa/totp', { password: PASSWORD }),
        regenerate: await as.post('/api/v1/users/me/mfa/recovery-codes', { password: PASSWORD }),
      };
      for (const [route, reply] of Object.entries(replies))
        expect(reply.status, `${who}: ${route} ${JSON.stringify(reply.body)}`).toBe(403);
    }
    expect(await server.base.db.totpFactor.count({ where: { userId: newcomer.id } })).toBe(0);
    expect((await person.api.get('/api/v1/users/me/mfa')).body).toEqual({
      totp: true,
      totp_pending: false,
      passkeys: 0,
      recovery_codes_left: 10,
    });
    expect(await auditsOf('mfa.recovery_codes.regenerate', person.id)).toBe(0);
    expect(await eventsOf('2fa.disabled', person.id)).toBe(0);

    const anon = client(server.url);
    expect((await anon.get('/api/v1/users/me/mfa')).status).toBe(401);
    expect((await anon.post('/api/v1/users/me/mfa/totp', { password: PASSWORD })).status).toBe(401);
  });
});

/** An access token for an enrolled person: their session comes from the full sign-in. */
async function tokenOfEnrolled(
  person: Person & Enrolled,
  app: { client_id: string; client_secret: string },
): Promise<string> {
  toMidStep();
  const login = await completeLogin({ mfa_token: await challenge(person), code: codeAt(person.secret) });
  expect(login.status).toBe(200);
  const back = await authorize(server.url, login.body.token, {
    client_id: app.client_id,
    redirect_uri: 'https://app.example.test/cb',
    response_type: 'code',
    scope: 'openid api',
    nonce: 'n',
    state: 's',
  });
  const tokens = await exchangeCode(server.url, app, codeFrom(back), 'https://app.example.test/cb');
  expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
  return tokens.body.access_token;
}
