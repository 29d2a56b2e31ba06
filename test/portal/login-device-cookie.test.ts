// The portal's sign-in form and the device cookie (docs/architecture.md#identity-sessions-and-tokens): a browser that
// signed in once at /login keeps signing in there while its client address is locked by wrong passwords for other
// accounts; a browser new to the account gets the form's "too many attempts" answer. Posted as a browser without
// JavaScript posts the form, with a cookie jar of its own. The service trusts X-Forwarded-For here (TRUST_PROXY), so
// that the office's address is one no other request uses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, ADMIN, type TestServer } from '../helpers/server.ts';
import { client } from '../helpers/http.ts';

let server: TestServer;
const OFFICE = '198.18.9.1';

beforeAll(async () => {
  server = await startTestServer({ env: { TRUST_PROXY: 'true' } });
});
afterAll(() => server?.stop());

/** A browser at the office: the cookies it was given, sent back with each post. */
function browser() {
  const jar = new Map<string, string>();
  return {
    jar,
    async signIn(email: string, password: string): Promise<Response> {
      const res = await fetch(`${server.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          accept: 'text/html',
          origin: server.url,
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-for': OFFICE,
          ...(jar.size ? { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } : {}),
        },
        body: new URLSearchParams({ email, password }).toString(),
      });
      for (const set of res.headers.getSetCookie()) {
        const [pair] = set.split(';');
        const [name, value] = pair!.split('=');
        jar.set(name!, value!);
      }
      return res;
    },
  };
}

describe('the sign-in form while the address is locked', () => {
  it('signs in a browser that signed in before, and refuses a new one', async () => {
    // given a browser at the office that signed in on the form
    const known = browser();
    const first = await known.signIn(ADMIN.email, ADMIN.password);
    expect(first.status).toBe(303);
    const device = first.headers.getSetCookie().find((c) => c.startsWith('tessera_device='));
    expect(device).toMatch(/^tessera_device=tsdc_[^;]+;/);
    for (const attribute of [/; Path=\/(;|$)/, /; HttpOnly(;|$)/, /; SameSite=Strict(;|$)/, /; Expires=[^;]+/])
      expect(device).toMatch(attribute);
    expect(device).not.toMatch(/; Secure/);
    known.jar.delete('tessera_session'); // signed out since

    // when 100 wrong passwords for other accounts come from the office
    for (let batch = 0; batch < 10; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          client(server.url).post(
            '/api/v1/auth/login',
            { email: `sprayed-${batch * 10 + i}@example.test`, password: 'Winter2026!' },
            { 'x-forwarded-for': OFFICE },
          ),
        ),
      );
      expect(replies.map((r) => r.status)).toEqual(Array(10).fill(401));
    }

    // then the browser that signed in before signs in again, to the admin dashboard
    const again = await known.signIn(ADMIN.email, ADMIN.password);
    expect(again.status).toBe(303);
    expect(again.headers.get('location')).toBe('/admin/dashboard');
    expect(known.jar.get('tessera_session')).toMatch(/^tss_/);

    // and a new browser with the right password is told to wait
    const fresh = browser();
    const refused = await fresh.signIn(ADMIN.email, ADMIN.password);
    expect(refused.status).toBe(429);
    expect(await refused.text()).toContain('Too many sign-in attempts');
    expect(fresh.jar.size).toBe(0);
  });
});
