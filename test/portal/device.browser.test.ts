import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import { freshPage, launchChromium, signedInPage, signInOnPage } from '../helpers/browser.ts';
import { signIn } from '../helpers/http.ts';
import { registerClient } from '../helpers/oauth.ts';

// /device (RFC 8628, docs/architecture.md#apps-without-secrets) in headless Chromium, with the keyboard alone: a
// person signed in types the code a device shows and approves it at 1280 px, and openid-client's polling gets the
// tokens; at 375 px a code arriving in verification_uri_complete is denied, and the device hears access_denied.

let server: TestServer;
let browser: Browser;
let rp: oidc.Configuration;

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    const { api } = await signIn(server.url, ADMIN.email, ADMIN.password);
    const tv = await registerClient(api, {
      name: 'Living-room TV',
      description: 'Notes on the big screen',
      token_endpoint_auth_method: 'none',
      redirect_uris: [],
      grant_types: ['urn:ietf:params:oauth:grant-type:device_code'],
      allowed_scopes: ['openid', 'email'],
    });
    rp = await oidc.discovery(new URL(server.url), tv.client_id, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
  } catch (error) {
    await browser?.close();
    await server.stop();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Presses Tab until `target` has the focus (at most 60 times): the page is reached as a keyboard user reaches it. */
async function tabTo(page: Page, target: ReturnType<Page['getByRole']>): Promise<void> {
  for (let i = 0; i < 60; i++) {
    if (await target.evaluate((el) => el === document.activeElement)) return;
    await page.keyboard.press('Tab');
  }
  expect.fail('the keyboard never reached the control');
}

/** The page does not scroll sideways. */
const fitsWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

describe('/device', () => {
  test('at 1280 px, a code typed with the keyboard is approved and openid-client gets the tokens', async () => {
    const started = await oidc.initiateDeviceAuthorization(rp, { scope: 'openid email' });
    const page = await signedInPage(browser, server.url, ADMIN, { viewport: { width: 1280, height: 800 } });
    await page.goto('/device');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Connect a device');

    // when the person types the code in lower case, as a keyboard user does
    await tabTo(page, page.getByRole('textbox', { name: 'Code' }));
    await page.keyboard.type(started.user_code.toLowerCase());
    await Promise.all([page.waitForURL((u) => u.searchParams.has('user_code')), page.keyboard.press('Enter')]);

    // then the page names the application, its organization, the code and the scopes
    await expect(page.getByTestId('client-name').textContent()).resolves.toBe('Living-room TV');
    await expect(page.getByTestId('organization-name').textContent()).resolves.toBe('Operator');
    await expect(page.getByTestId('user-code').textContent()).resolves.toBe(started.user_code);
    await expect(page.getByTestId('scopes').locator('li').allTextContents()).resolves.toEqual([
      'Sign you in with your Tessera account',
      'See your e-mail address',
    ]);
    expect(await fitsWidth(page)).toBe(true);

    // when they approve with the keyboard while the device polls
    const polling = oidc.pollDeviceAuthorizationGrant(rp, started);
    await tabTo(page, page.getByRole('button', { name: 'Approve' }));
    await Promise.all([page.getByTestId('device-answer').waitFor(), page.keyboard.press('Enter')]);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Device connected');

    // then the device gets the tokens of the person
    const tokens = await polling;
    expect(tokens.claims()).toMatchObject({ email: ADMIN.email });

    // and the code is spent: typed again, it is refused on the page
    await page.goto(`/device?user_code=${started.user_code}`);
    await expect(page.locator('main').textContent()).resolves.toContain('This code is wrong, already used or expired');
    await page.context().close();
  }, 60_000);

  test('at 375 px, a signed-out person follows verification_uri_complete, signs in, and denies', async () => {
    const started = await oidc.initiateDeviceAuthorization(rp, { scope: 'openid' });
    const page = await freshPage(browser, server.url, { viewport: { width: 375, height: 740 } });
    await page.goto(started.verification_uri_complete!);
    expect(new URL(page.url()).pathname).toBe('/login');
    await signInOnPage(page, ADMIN.email, ADMIN.password);
    await page.waitForURL((u) => u.pathname === '/device');
    await page.getByTestId('client-name').waitFor();
    expect(await fitsWidth(page)).toBe(true);

    await tabTo(page, page.getByRole('button', { name: 'Deny' }));
    await Promise.all([page.getByTestId('device-answer').waitFor(), page.keyboard.press('Enter')]);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Request denied');
    const failure = await oidc.pollDeviceAuthorizationGrant(rp, { ...started, interval: 0 }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(oidc.ResponseBodyError);
    expect((failure as oidc.ResponseBodyError).error).toBe('access_denied');
    await page.context().close();
  }, 60_000);
});
