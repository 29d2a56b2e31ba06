import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser } from 'playwright-core';
import { freshPage as freshPageOf, launchChromium, signInOnPage } from '../helpers/browser.ts';
import { startTestServer } from '../helpers/server.ts';

// Sign-in through the real service (API + portal in one process) in headless Chromium.

const owner = { email: 'owner@example.com', password: 'correct horse battery staple', orgName: 'Operator' };
const screenshots = new URL('../.tmp/', import.meta.url);

let server: Awaited<ReturnType<typeof startTestServer>>;
let browser: Browser;

beforeAll(async () => {
  server = await startTestServer({ bootstrap: owner });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const freshPage = () => freshPageOf(browser, server.url);
const signIn = signInOnPage;

describe('portal sign-in', () => {
  test('a wrong password shows the error on /login', async () => {
    // given the sign-in page
    const page = await freshPage();
    await page.goto('/login');
    await expect(page.title()).resolves.toBe('Sign in · Tessera');

    // when the owner signs in with a wrong password
    await signIn(page, owner.email, 'not the password');

    // then the page says so and stays on /login
    await expect(page.getByRole('alert').textContent()).resolves.toContain('Invalid email or password');
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.context().close();
  });

  test('the right password lands an owner on the admin dashboard; the portal dashboard shows the email', async () => {
    // given the sign-in page
    const page = await freshPage();
    await page.goto('/login');

    // when the owner signs in
    await signIn(page, owner.email, owner.password);

    // then they land on the admin dashboard, and the portal dashboard shows who is signed in, in which organization
    await page.waitForURL((url) => url.pathname === '/admin/dashboard');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Admin dashboard');
    await page.goto('/portal/dashboard');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Dashboard');
    await expect(page.getByTestId('user-email').textContent()).resolves.toBe(owner.email);
    await expect(page.locator('main').textContent()).resolves.toContain(owner.orgName);
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'tessera_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });

    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('portal-dashboard.png', screenshots).pathname, fullPage: true });
    await page.context().close();
  });

  test('the admin dashboard sends a signed-out visitor to sign in and back', async () => {
    // given a signed-out browser
    const page = await freshPage();

    // when it opens the admin dashboard
    await page.goto('/admin/dashboard');

    // then it is sent to sign in, asking to come back
    const login = new URL(page.url());
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toBe('/admin/dashboard');

    // and after signing in as the operator org's owner it lands back on the admin dashboard
    await signIn(page, owner.email, owner.password);
    await page.waitForURL((url) => url.pathname === '/admin/dashboard');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Admin dashboard');
    await expect(page.locator('main').textContent()).resolves.toContain(owner.orgName);
    await page.context().close();
  });

  test('a return_to to another origin is ignored', async () => {
    // given a sign-in link asking to return to a protocol-relative URL
    const page = await freshPage();
    await page.goto('/login?return_to=//evil.example');

    // when the owner signs in
    await signIn(page, owner.email, owner.password);

    // then the browser stays on Tessera, on the owner's admin dashboard
    await page.waitForURL((url) => url.pathname === '/admin/dashboard');
    expect(new URL(page.url()).origin).toBe(new URL(server.url).origin);
    await page.context().close();
  });
});

describe('return_to that a URL parser turns into another host', () => {
  const tricks = [
    '/.//evil.example',
    '/..//evil.example',
    '/%2e//evil.example',
    '/./\\evil.example',
    '/%2E%2E//evil.example/x',
  ];

  test('signing in stays on Tessera, on the dashboard', async () => {
    for (const trick of tricks) {
      // given a sign-in link whose return_to normalises to //evil.example
      const page = await freshPage();
      await page.goto(`/login?return_to=${encodeURIComponent(trick)}`);

      // when the owner signs in
      await signIn(page, owner.email, owner.password);

      // then the browser lands on the (owner's admin) dashboard of this origin
      await page.waitForURL((url) => url.pathname === '/admin/dashboard');
      expect(new URL(page.url()).origin, trick).toBe(new URL(server.url).origin);
      await page.context().close();
    }
  }, 90_000); // five whole sign-ins, each ending on the admin dashboard: more than one test's usual 30 s on a busy machine

  test('a signed-in visit to /login with it is sent home, not to a 500', async () => {
    const cookie = `tessera_session=${await sessionToken()}`;
    for (const trick of tricks) {
      const res = await fetch(`${server.url}/login?return_to=${encodeURIComponent(trick)}`, {
        headers: { cookie },
        redirect: 'manual',
      });
      expect(res.status, trick).toBe(303);
      expect(res.headers.get('location'), trick).toBe('/admin/dashboard');
    }
    // A same-origin return_to, relative or absolute, is still honoured.
    for (const [given, expected] of [
      ['/admin/dashboard?x=1', '/admin/dashboard?x=1'],
      [`${server.url}/admin/clients`, '/admin/clients'],
    ] as const) {
      const res = await fetch(`${server.url}/login?return_to=${encodeURIComponent(given)}`, {
        headers: { cookie },
        redirect: 'manual',
      });
      expect(res.headers.get('location'), given).toBe(expected);
    }
  });
});

describe('portal response headers', () => {
  test('pages carry a script-src CSP with a nonce, and the portal runs under it', async () => {
    // given a page that records CSP violations
    const page = await freshPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content[- ]Security[- ]Policy/i.test(message.text())) violations.push(message.text());
    });

    // when the sign-in page loads and the owner signs in through the enhanced form
    const response = await page.goto('/login');
    await page.waitForFunction(() => document.querySelector('form') !== null);
    await signIn(page, owner.email, owner.password);
    await page.waitForURL((url) => url.pathname === '/admin/dashboard');

    // then the policy names a per-response nonce for scripts, no inline scripts, and nothing was blocked
    const csp = response!.headers()['content-security-policy'] ?? '';
    expect(csp).toMatch(/script-src 'self' 'nonce-[^']+'/);
    expect(csp).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("object-src 'none'");
    const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
    expect(await response!.text()).toContain(`nonce="${nonce}"`);
    expect(violations).toEqual([]);
    await page.context().close();
  });

  test('an injected inline script does not run', async () => {
    const page = await freshPage();
    await page.goto('/login');
    // An attacker's markup reaching the page: a script without the nonce.
    const ran = await page.evaluate(async () => {
      (window as unknown as { injected?: boolean }).injected = false;
      const script = document.createElement('script');
      script.textContent = 'window.injected = true';
      document.body.appendChild(script);
      await new Promise((resolve) => setTimeout(resolve, 50));
      return (window as unknown as { injected?: boolean }).injected;
    });
    expect(ran).toBe(false);
    await page.context().close();
  });

  test('pages rendered for a session are never cached; the sign-in page for a visitor may be', async () => {
    const cookie = `tessera_session=${await sessionToken()}`;
    for (const path of [
      '/portal/dashboard',
      '/admin/dashboard',
      '/admin/clients',
      '/portal/oauth-clients',
      '/portal/dashboard/__data.json',
    ]) {
      const res = await fetch(`${server.url}${path}`, { headers: { cookie }, redirect: 'manual' });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('cache-control'), path).toBe('no-store');
    }
  });
});

describe('portal forms and pages with input they cannot read', () => {
  const origin = () => new URL(server.url).origin;
  const post = (path: string, body: BodyInit, headers: Record<string, string>) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      body,
      headers: { origin: origin(), ...headers },
      redirect: 'manual',
    });

  test('a same-origin form post that is not a form answers 415 or 400, never 500', async () => {
    const cookie = `tessera_session=${await sessionToken()}`;
    for (const path of ['/login', '/consent', '/admin/clients?/create', '/logout']) {
      const cases: [string, BodyInit, Record<string, string>, number][] = [
        ['text/plain', 'email=a&password=b', { 'content-type': 'text/plain' }, 415],
        ['JSON', '{"email":"a"}', { 'content-type': 'application/json' }, 415],
        ['no content type', new Uint8Array([1, 2, 3]), {}, 415],
        ['multipart without a boundary', 'garbage', { 'content-type': 'multipart/form-data' }, 400],
        ['multipart that is not', 'garbage', { 'content-type': 'multipart/form-data; boundary=x' }, 400],
      ];
      for (const [what, body, headers, status] of cases) {
        const res = await post(path, body, { cookie, ...headers });
        expect(res.status, `${path} ${what}`).toBe(status);
      }
    }
  });

  test('a NUL in the sign-in form is a wrong sign-in, not a 500', async () => {
    for (const body of [
      'email=a%00&password=x',
      `email=${encodeURIComponent(owner.email)}&password=a%00`,
      'email=%00&password=%00&return_to=%00',
    ]) {
      const res = await post('/login', body, { 'content-type': 'application/x-www-form-urlencoded' });
      expect(res.status, body).toBe(400);
      expect(await res.text(), body).toContain('Invalid email or password');
    }
  });

  test('an identifier no client can have is a 404 page', async () => {
    const cookie = `tessera_session=${await sessionToken()}`;
    for (const id of ['%00', 'a%00b', 'x'.repeat(300)]) {
      const res = await fetch(`${server.url}/admin/clients/${id}`, { headers: { cookie } });
      expect(res.status, id).toBe(404);
    }
  });
});

/** A session token of the owner, signed in over the API (the cookie the portal reads). */
async function sessionToken(): Promise<string> {
  const res = await fetch(`${server.url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: owner.email, password: owner.password }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { token: string }).token;
}
