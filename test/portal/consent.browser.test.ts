import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, type TestServer } from '../helpers/server.ts';
import {
  authorizeUrl,
  backAtApp,
  freshPage,
  signedInPage,
  signInOnPage,
  startApplicationSetup,
  type ApplicationSetup,
  type RedirectTarget,
} from '../helpers/browser.ts';
import { signIn } from '../helpers/http.ts';
import { exchangeCode, registerClient, type RegisteredClient } from '../helpers/oauth.ts';

// The consent page in the authorization code flow, in headless Chromium against the real service: the
// browser goes to /oauth/authorize, signs in, answers the consent page and lands on the application.

const screenshots = new URL('../.tmp/', import.meta.url);

let setup: ApplicationSetup;
let server: TestServer;
let browser: Browser;
let app: RedirectTarget;
let client: RegisteredClient;

beforeAll(async () => {
  setup = await startApplicationSetup({ name: 'Acme Notes', description: 'Notes for your whole team' });
  ({ server, browser, app, client } = setup);
}, 120_000);

afterAll(() => setup?.close());

/** A signed-in browser that has opened the authorize URL and sits on the consent page. */
async function onConsentPage(): Promise<Page> {
  const page = await signedInPage(browser, server.url, ADMIN);
  await page.goto(authorizeUrl(client));
  expect(new URL(page.url()).pathname).toBe('/consent');
  return page;
}

describe('consent page', () => {
  test('a signed-out browser signs in first, then sees the application and its permissions; Deny goes back with access_denied', async () => {
    // given a signed-out browser
    const page = await freshPage(browser, server.url);

    // when it opens the application's authorization URL, with a login hint
    await page.goto(authorizeUrl(client, { login_hint: ADMIN.email }));

    // then it is sent to sign in, asking to come back to the authorization endpoint, the email prefilled
    const login = new URL(page.url());
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toMatch(/^\/oauth\/authorize\?/);
    await expect(page.getByLabel('Email').inputValue()).resolves.toBe(ADMIN.email);

    // and after signing in the consent page names the application, its organization and the permissions in words
    await signInOnPage(page, ADMIN.email, ADMIN.password);
    await page.waitForURL((url) => url.pathname === '/consent');
    await expect(page.getByTestId('client-name').textContent()).resolves.toBe('Acme Notes');
    const main = await page.locator('main').textContent();
    expect(main).toContain('Notes for your whole team');
    expect(main).toContain('Operator');
    await expect(page.getByTestId('scopes').locator('li').allTextContents()).resolves.toEqual([
      'Sign you in with your Tessera account',
      'See your e-mail address',
    ]);
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('consent.png', screenshots).pathname, fullPage: true });

    // when the user denies
    await page.getByRole('button', { name: 'Deny' }).click();

    // then the application gets access_denied and its state back, and no code
    const query = await backAtApp(page, app);
    expect(query.get('error')).toBe('access_denied');
    expect(query.get('state')).toBe('s1');
    expect(query.has('code')).toBe(false);
    await page.context().close();
  });

  test("a login hint is only ever the email field's text", async () => {
    // given a sign-in link whose login_hint carries markup
    const page = await freshPage(browser, server.url);
    const hint = '"><b id="injected">x</b>';

    // when it is opened
    await page.goto(`/login?${new URLSearchParams({ login_hint: hint })}`);

    // then the email field holds the text as typed, and no element was made of it
    await expect(page.getByLabel('Email').inputValue()).resolves.toBe(hint);
    await expect(page.locator('#injected').count()).resolves.toBe(0);
    await page.context().close();
  });

  test('Allow goes back with a code that the application exchanges for tokens', async () => {
    // given a signed-in user on the consent page
    const page = await onConsentPage();

    // when they allow
    await page.getByRole('button', { name: 'Allow' }).click();

    // then the application gets a code and its state back, as the browser's and the application's server's view agree
    const query = await backAtApp(page, app);
    expect(query.get('state')).toBe('s1');
    const code = query.get('code');
    expect(code).toBeTruthy();
    expect(app.received.at(-1)?.get('code')).toBe(code);

    // and the code buys tokens at the token endpoint
    const reply = await exchangeCode(server.url, client, code!, app.redirectUri);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toMatchObject({
      access_token: expect.any(String),
      id_token: expect.any(String),
      refresh_token: expect.any(String),
      token_type: expect.stringMatching(/^bearer$/i),
    });
    await page.context().close();
  });

  test('a second authorization for the same scopes skips the consent page', async () => {
    // given a user who already allowed the application (previous test), signed in on a new browser
    const page = await signedInPage(browser, server.url, ADMIN);
    const visited: string[] = [];
    page.on('request', (r) => {
      if (r.isNavigationRequest()) visited.push(new URL(r.url()).pathname);
    });

    // when the application asks again for the same scopes
    await page.goto(authorizeUrl(client, { state: 's2', nonce: 'n2' }));

    // then the browser goes straight back with a code, never showing the consent page
    const query = await backAtApp(page, app);
    expect(query.get('state')).toBe('s2');
    expect(query.get('code')).toBeTruthy();
    expect(visited).not.toContain('/consent');
    await page.context().close();
  });

  test('asking for a scope not yet allowed shows the consent page again, listing it', async () => {
    // given a signed-in user who allowed openid and email
    const page = await signedInPage(browser, server.url, ADMIN);

    // when the application also asks for the profile
    await page.goto(authorizeUrl(client, { scope: 'openid email profile' }));

    // then the consent page asks about all three
    expect(new URL(page.url()).pathname).toBe('/consent');
    await expect(page.getByTestId('scopes').locator('li').allTextContents()).resolves.toContain(
      'See your name and picture',
    );
    await page.context().close();
  });

  test("the api scope is named in words: acting as the user in Tessera's API", async () => {
    // given an application allowed the api scope
    const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
    const tool = await registerClient(api, {
      name: 'Automation',
      redirect_uris: [app.redirectUri],
      allowed_scopes: ['openid', 'api'],
    });
    const page = await signedInPage(browser, server.url, ADMIN);

    // when it asks for it
    await page.goto(authorizeUrl(tool, { scope: 'openid api' }));

    // then the consent page says what it means
    expect(new URL(page.url()).pathname).toBe('/consent');
    await expect(page.getByTestId('scopes').locator('li').allTextContents()).resolves.toEqual([
      'Sign you in with your Tessera account',
      "Act as you in Tessera's API",
    ]);
    await page.context().close();
  });

  test('a forged or expired request shows a 400 page with the reason', async () => {
    // given a signed-in browser
    const page = await signedInPage(browser, server.url, ADMIN);

    // when it opens the consent page with a request the service did not sign
    const response = await page.goto('/consent?request=not-a-signed-request');

    // then the page answers 400 and says why, with nothing to allow
    expect(response?.status()).toBe(400);
    await expect(page.locator('main').textContent()).resolves.toContain(
      'The consent request is invalid or has expired',
    );
    await expect(page.getByRole('button', { name: 'Allow' }).count()).resolves.toBe(0);
    await page.context().close();
  });

  test('a signed-out visitor of the consent page is sent to sign in and back', async () => {
    // given a signed-out browser
    const page = await freshPage(browser, server.url);

    // when it opens a consent page
    await page.goto('/consent?request=abc');

    // then it is sent to sign in, asking to come back to that very page
    const login = new URL(page.url());
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toBe('/consent?request=abc');
    await page.context().close();
  });

  test("another site's form cannot answer the consent page (SvelteKit's CSRF check)", async () => {
    // given a form on another origin posting to the consent page
    const res = await fetch(new URL('/consent?request=x', server.url), {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ request: 'x', decision: 'allow' }),
      redirect: 'manual',
    });

    // then it is refused before any action runs
    expect(res.status).toBe(403);
  });

  test('the consent page cannot be framed and is not cached', async () => {
    // given a user on the consent page
    const page = await signedInPage(browser, server.url, ADMIN);

    // when the page is loaded
    const response = await page.goto(authorizeUrl(client, { prompt: 'consent' }));

    // then it forbids framing and caching
    expect(new URL(page.url()).pathname).toBe('/consent');
    const headers = response!.headers();
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['cache-control']).toBe('no-store');
    await page.context().close();
  });
});
