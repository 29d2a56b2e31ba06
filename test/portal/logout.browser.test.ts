import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser } from 'playwright-core';
import { ADMIN, type TestServer } from '../helpers/server.ts';
import { signIn } from '../helpers/http.ts';
import {
  freshPage,
  signedInPage,
  startApplicationSetup,
  type ApplicationSetup,
  type RedirectTarget,
} from '../helpers/browser.ts';
import { registerClient, type RegisteredClient } from '../helpers/oauth.ts';

// RP-initiated logout without an id_token_hint, in headless Chromium: /oauth/logout asks the user on the
// portal's /logout page first, and only the confirmation there ends the session and returns to the application.

const screenshots = new URL('../.tmp/', import.meta.url);

let setup: ApplicationSetup;
let server: TestServer;
let browser: Browser;
let app: RedirectTarget;
let client: RegisteredClient;

beforeAll(async () => {
  setup = await startApplicationSetup({ name: 'Acme Notes', description: 'Notes' });
  ({ server, browser, app } = setup);
  const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
  client = await registerClient(api, {
    name: 'Signs out',
    redirect_uris: [app.redirectUri],
    post_logout_redirect_uris: [`${app.origin}/bye`],
    allowed_scopes: ['openid'],
  });
}, 120_000);

afterAll(() => setup?.close());

const logoutUrl = () =>
  `/oauth/logout?${new URLSearchParams({ client_id: client.client_id, post_logout_redirect_uri: `${app.origin}/bye`, state: 'x' })}`;

describe('sign-out asked for by an application', () => {
  test('the user is asked first; confirming signs out and returns to the application with the state', async () => {
    // given a signed-in browser
    const page = await signedInPage(browser, server.url, ADMIN);

    // when an application sends it to the logout endpoint without an id_token_hint
    const response = await page.goto(logoutUrl());

    // then it is asked, on a page that cannot be framed or cached, and is still signed in meanwhile
    expect(new URL(page.url()).pathname).toBe('/logout');
    expect(response!.headers()['x-frame-options']).toBe('DENY');
    expect(response!.headers()['cache-control']).toBe('no-store');
    await expect(page.locator('main').textContent()).resolves.toContain('An application asked to sign you out');
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('logout-confirm.png', screenshots).pathname, fullPage: true });
    const stillIn = await page.context().newPage();
    await stillIn.goto('/portal/dashboard');
    expect(new URL(stillIn.url()).pathname).toBe('/portal/dashboard');
    await stillIn.close();

    // when the user confirms
    await page.getByRole('main').getByRole('button', { name: 'Sign out' }).click();

    // then the browser is back at the application with the state, and signed out
    await page.waitForURL((url) => url.origin === app.origin && url.pathname === '/bye');
    expect(new URL(page.url()).searchParams.get('state')).toBe('x');
    await page.goto(`${server.url}/portal/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.context().close();
  });

  test("the portal's own sign-out still works without a request (control)", async () => {
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/logout');
    await page.getByRole('main').getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((url) => url.pathname === '/login');
    await page.goto('/portal/dashboard');
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.context().close();
  });

  test('a signed-out browser is not asked (nothing to end): straight back to the application', async () => {
    const page = await freshPage(browser, server.url);
    await page.goto(logoutUrl());
    await page.waitForURL((url) => url.origin === app.origin && url.pathname === '/bye');
    await page.context().close();
  });
});
