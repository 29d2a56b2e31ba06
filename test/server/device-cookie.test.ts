// The address lock locks guesses, not people (docs/architecture.md#identity-sessions-and-tokens, OWASP's device
// cookies): a sign-in sets a signed device cookie for its account, and while a client address is locked by wrong
// passwords for many accounts, a browser showing the device cookie of the account it signs in to still gets in. A
// new browser, a forged or expired cookie, or another account's cookie is refused like any sign-in from that address.
// The service trusts X-Forwarded-For here (TRUST_PROXY), so that the office's address is one no other request uses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client, signIn, type Reply } from '../helpers/http.ts';
import { addPerson, createTenant, PASSWORD, type Person, type Tenant } from '../helpers/fixtures.ts';
import { movableClock, DAY } from '../helpers/clock.ts';
import { codeAt, enrolTotp, toMidStep } from '../helpers/totp.ts';

const clock = movableClock();
let server: TestServer;
let tenant: Tenant;

/** The office: one NAT address for everyone in it (198.18.0.0/15, the benchmarking range). */
const OFFICE = '198.18.7.1';

beforeAll(async () => {
  server = await startTestServer({ clock, env: { TRUST_PROXY: 'true' } });
  const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
  tenant = await createTenant(server.url, api);
});
afterAll(() => server?.stop());

const statusCounts = (replies: Reply[]) =>
  replies.reduce<Record<number, number>>((n, r) => ({ ...n, [r.status]: (n[r.status] ?? 0) + 1 }), {});

/** A sign-in from the office, with the device cookie `device` when given. */
const login = (email: string, password: string, device?: string) =>
  client(server.url).post(
    '/api/v1/auth/login',
    { email, password },
    { 'x-forwarded-for': OFFICE, ...(device ? { cookie: `tessera_device=${device}` } : {}) },
  );

/** The Set-Cookie header of the device cookie in `reply`, if any. */
const deviceSetCookie = (reply: Reply) => reply.headers.getSetCookie().find((c) => c.startsWith('tessera_device='));
const deviceOf = (reply: Reply) => /^tessera_device=([^;]+)/.exec(deviceSetCookie(reply) ?? '')?.[1];

describe('a client address locked by wrong passwords for many accounts', () => {
  let colleague: Person;
  let typist: Person;
  let secondFactor: Person & { secret: string };
  const cookies: Record<string, string> = {};
  /** The address's count after the spray. */
  let sprayed = 0;

  beforeAll(async () => {
    colleague = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'colleague');
    typist = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'typist');
    const withApp = await addPerson(server.url, tenant.owner.api, tenant.id, 'member', 'totp');
    secondFactor = { ...withApp, secret: (await enrolTotp(withApp.api, clock)).secret };
  });

  it('sets a signed device cookie on each sign-in: HttpOnly, SameSite, the whole site, for a year', async () => {
    // given people who signed in at the office earlier
    for (const person of [colleague, typist]) {
      const reply = await login(person.email, PASSWORD);
      expect(reply.status).toBe(200);
      // then the answer sets the session cookie and the device cookie, which the body does not carry
      expect(reply.headers.get('set-cookie')).toMatch(/^tessera_session=tss_/);
      const set = deviceSetCookie(reply)!;
      expect(set).toMatch(/^tessera_device=tsdc_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+;/);
      expect(set).toMatch(/; path=\/(;|$)/);
      expect(set).toMatch(/; httponly/i);
      expect(set).toMatch(/; samesite=strict/i);
      expect(set).not.toMatch(/; secure/i); // BASE_URL is http here
      const expires = new Date(/; expires=([^;]+)/.exec(set)![1]!).getTime();
      expect(expires - clock.now().getTime()).toBeGreaterThan(364 * DAY * 1000);
      expect(JSON.stringify(reply.body)).not.toContain(deviceOf(reply)!);
      cookies[person.email] = deviceOf(reply)!;
    }
    // and the second factor's step sets it too, not the password step before it
    toMidStep(clock);
    const challenge = await login(secondFactor.email, PASSWORD);
    expect(challenge.body.mfa_required).toBe(true);
    expect(deviceSetCookie(challenge)).toBeUndefined();
    const done = await client(server.url).post(
      '/api/v1/auth/login/mfa',
      { mfa_token: challenge.body.mfa_token, code: codeAt(clock, secondFactor.secret) },
      { 'x-forwarded-for': OFFICE },
    );
    expect(done.status).toBe(200);
    cookies[secondFactor.email] = deviceOf(done)!;
    expect(cookies[secondFactor.email]).toBeTruthy();
  });

  it('lets at most 100 wrong passwords an hour reach a check, then refuses the address before hashing', async () => {
    // when 120 wrong passwords for different accounts arrive from the office, 12 at a time (the ninth dozen crosses
    // the limit while its passwords are being checked)
    const replies: Reply[] = [];
    for (let batch = 0; batch < 10; batch++) {
      replies.push(
        ...(await Promise.all(
          Array.from({ length: 12 }, (_, i) => login(`sprayed-${batch * 12 + i}@example.test`, 'Winter2026!')),
        )),
      );
    }
    // then exactly 100 were answered as wrong, and the rest refused with 429 and Retry-After (an hour's lock)
    expect(statusCounts(replies)).toEqual({ 401: 100, 429: 20 });
    expect(statusCounts(replies.slice(96, 108))).toEqual({ 401: 4, 429: 8 });
    const retryAfter = Number(replies.at(-1)!.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(15 * 60);
    expect(retryAfter).toBeLessThanOrEqual(60 * 60);
    // and the last dozen was refused by the lock, never counted (so never hashed): at most the 108 checked count
    const address = await server.base.db.loginThrottle.findUnique({ where: { key: `address:${OFFICE}` } });
    expect(address!.failures).toBeGreaterThanOrEqual(100);
    expect(address!.failures).toBeLessThanOrEqual(108);
    sprayed = address!.failures;
    // and each unknown e-mail refused is a platform event of its own
    const throttled = await server.base.db.auditLog.count({
      where: {
        action: 'auth.login.throttled',
        organizationId: null,
        details: { path: ['reason'], equals: 'address_locked' },
      },
    });
    expect(throttled).toBe(20);
  });

  it('still signs in a colleague whose browser carries the device cookie of their account', async () => {
    const reply = await login(colleague.email, PASSWORD, cookies[colleague.email]);
    expect(reply.status).toBe(200);
    expect(reply.body.user.email).toBe(colleague.email);
    // and renews the cookie
    expect(deviceOf(reply)).toBeTruthy();
    expect(deviceOf(reply)).not.toBe(cookies[colleague.email]);
  });

  it('completes the second factor of a browser with the device cookie', async () => {
    toMidStep(clock);
    const challenge = await login(secondFactor.email, PASSWORD, cookies[secondFactor.email]);
    expect(challenge.status).toBe(200);
    expect(challenge.body.mfa_required).toBe(true);
    const done = await client(server.url).post(
      '/api/v1/auth/login/mfa',
      { mfa_token: challenge.body.mfa_token, code: codeAt(clock, secondFactor.secret) },
      {
        'x-forwarded-for': OFFICE,
        cookie: `tessera_device=${cookies[secondFactor.email]}`,
      },
    );
    expect(done.status).toBe(200);
    // but not without it: the same step from a new browser at the office is refused
    toMidStep(clock);
    const fresh = await login(secondFactor.email, PASSWORD, cookies[secondFactor.email]);
    const refused = await client(server.url).post(
      '/api/v1/auth/login/mfa',
      { mfa_token: fresh.body.mfa_token, code: codeAt(clock, secondFactor.secret) },
      { 'x-forwarded-for': OFFICE },
    );
    expect(refused.status).toBe(429);
  });

  it('refuses the right password from a new browser with 429 and Retry-After', async () => {
    const reply = await login(colleague.email, PASSWORD);
    expect(reply.status).toBe(429);
    expect(reply.body.error).toBe('rate_limited');
    expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(deviceSetCookie(reply)).toBeUndefined();
  });

  it('refuses a forged cookie, an expired one, and one of another account', async () => {
    const real = cookies[colleague.email]!;
    const [header, payload, signature] = real.slice('tsdc_'.length).split('.');
    const flipped = signature!.startsWith('A') ? `B${signature!.slice(1)}` : `A${signature!.slice(1)}`;
    const json = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    // A cookie the service signed itself, a year and a day ago (imported here: the module is the service's own).
    const { issueDeviceCookie } = await import('../../schema/modules/auth/device-cookie.ts');
    const expired = await issueDeviceCookie(
      { ...server.base, clock: { now: () => new Date(clock.now().getTime() - 366 * DAY * 1000) } },
      colleague.email,
    );
    const forgeries = {
      'a wrong signature': `tsdc_${header}.${payload}.${flipped}`,
      'another account named under the signature': `tsdc_${header}.${json({ ...claims, sub: typist.email })}.${signature}`,
      'alg none': `tsdc_${json({ alg: 'none', typ: 'device+jwt' })}.${payload}.`,
      'no prefix': `${header}.${payload}.${signature}`,
      'expired a day ago': expired.value,
      junk: 'tsdc_%00;,x'.repeat(300),
      'the cookie of another account': cookies[typist.email]!,
    };
    for (const [what, cookie] of Object.entries(forgeries)) {
      const reply = await login(colleague.email, PASSWORD, cookie);
      expect(reply.status, what).toBe(429);
    }
  });

  it('counts a known browser’s wrong passwords per account: five lock the account, even for that browser', async () => {
    // when the typist, with their device cookie, mistypes five times
    for (let i = 0; i < 5; i++)
      expect((await login(typist.email, `typo ${i}`, cookies[typist.email])).status).toBe(401);
    // then the account is locked for every browser, theirs too
    const locked = await login(typist.email, PASSWORD, cookies[typist.email]);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeLessThanOrEqual(15 * 60);
    // and the colleague, whose account was not guessed, still gets in
    expect((await login(colleague.email, PASSWORD, cookies[colleague.email])).status).toBe(200);
    // and those wrong passwords did not count against the address: its count is still the spray's
    const address = await server.base.db.loginThrottle.findUnique({ where: { key: `address:${OFFICE}` } });
    expect(address?.failures).toBe(sprayed);
  });

  it('lets everyone in again once the hour is over', async () => {
    clock.advance(61 * 60);
    expect((await login(colleague.email, PASSWORD)).status).toBe(200);
  });
});
