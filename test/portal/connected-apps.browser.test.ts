import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, type TestServer } from '../helpers/server.ts';
import {
  authorizeUrl,
  backAtApp,
  freshPage,
  signedInPage,
  startApplicationSetup,
  type ApplicationSetup,
  type RedirectTarget,
} from '../helpers/browser.ts';
import type { RegisteredClient } from '../helpers/oauth.ts';

// /portal/oauth-clients: the applications the user allowed, and taking that access back, in headless Chromium.

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

/** Runs the authorization flow for `client` and returns the path it showed: '/consent' or the app's '/cb'. */
async function authorizeAndAllow(page: Page): Promise<string> {
  await page.goto(authorizeUrl(client));
  const shown = new URL(page.url());
  if (shown.pathname === '/consent') await page.getByRole('button', { name: 'Allow' }).click();
  expect((await backAtApp(page, app)).get('code')).toBeTruthy();
  return shown.origin === app.origin ? '/cb' : shown.pathname;
}

describe('connected apps', () => {
  test('with no approved application the page says so, and the dashboard links to it', async () => {
    // given a signed-in user on the dashboard who has approved nothing (an owner lands on the admin one)
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/portal/dashboard');

    // when they follow the dashboard's link
    await page.getByRole('link', { name: 'Manage connected apps' }).click();

    // then the connected apps page shows its empty state
    await page.waitForURL((url) => url.pathname === '/portal/oauth-clients');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Connected apps');
    await expect(page.locator('main').textContent()).resolves.toContain('No connected apps');
    await expect(page.getByTestId('connected-app').count()).resolves.toBe(0);
    await page.context().close();
  });

  test('a signed-out visitor is sent to sign in and back', async () => {
    const page = await freshPage(browser, server.url);
    await page.goto('/portal/oauth-clients');
    const login = new URL(page.url());
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toBe('/portal/oauth-clients');
    await page.context().close();
  });

  test('an approved application is listed with its scopes; Remove access takes it away and consent is asked again', async () => {
    // given a user who approved the application on the consent page
    const page = await signedInPage(browser, server.url, ADMIN);
    expect(await authorizeAndAllow(page)).toBe('/consent');

    // when they open their connected apps
    await page.goto('/portal/oauth-clients');

    // then the application is listed with its description, the permissions given, and when
    const card = page.getByTestId('connected-app');
    await expect(card.count()).resolves.toBe(1);
    await expect(card.getByRole('heading').textContent()).resolves.toBe('Acme Notes');
    const text = await card.textContent();
    expect(text).toContain('Notes for your whole team');
    await expect(card.getByRole('list', { name: 'Permissions' }).locator('li').allTextContents()).resolves.toEqual([
      'openid',
      'email',
    ]);
    const granted = await card.locator('time').first().getAttribute('datetime');
    expect(Date.now() - Date.parse(granted!)).toBeLessThan(60_000);
    await mkdir(screenshots, { recursive: true });
    await page.screenshot({ path: new URL('connected-apps.png', screenshots).pathname, fullPage: true });

    // and while it stays connected, the application signs in without asking
    expect(await authorizeAndAllow(page)).toBe('/cb');

    // when the user removes its access
    await page.goto('/portal/oauth-clients');
    await Promise.all([
      page.waitForResponse(
        (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/portal/oauth-clients',
      ),
      card.getByRole('button', { name: 'Remove access' }).click(),
    ]);

    // then the list reloads without it
    await expect(page.getByText('No connected apps').waitFor()).resolves.toBeUndefined();
    await expect(page.getByTestId('connected-app').count()).resolves.toBe(0);

    // and the next authorization shows the consent page again
    await page.goto(authorizeUrl(client));
    expect(new URL(page.url()).pathname).toBe('/consent');
    await page.context().close();
  });

  test('removing an app that is no longer connected says so', async () => {
    // given a connected app open in two tabs
    const page = await signedInPage(browser, server.url, ADMIN);
    expect(await authorizeAndAllow(page)).toBe('/consent');
    await page.goto('/portal/oauth-clients');
    const other = await page.context().newPage();
    await other.goto('/portal/oauth-clients');

    // when it is removed in one tab, then in the other
    await page.getByRole('button', { name: 'Remove access' }).click();
    await page.getByText('No connected apps').waitFor();
    await other.getByRole('button', { name: 'Remove access' }).click();

    // then the second tab says it is already gone, and shows the up-to-date list
    await expect(other.getByRole('alert').textContent()).resolves.toContain('no longer connected');
    await other.getByText('No connected apps').waitFor();
    await page.context().close();
  });
});
