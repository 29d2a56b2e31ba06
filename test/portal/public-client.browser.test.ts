import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { ADMIN, startTestServer, type TestServer } from '../helpers/server.ts';
import {
  backAtApp,
  launchChromium,
  signedInPage,
  startRedirectTarget,
  type RedirectTarget,
} from '../helpers/browser.ts';

// A public client (docs/architecture.md#apps-without-secrets) from end to end, in headless Chromium: the operator's
// owner registers it on /admin/clients as a browser, mobile or command-line app, which shows a client ID and no
// secret; openid-client, as that public client (no client authentication), sends the browser to sign in and consent
// with PKCE S256 to a loopback redirect on a port of its own, exchanges the code, refreshes, and a replayed refresh
// token ends the grant.

let server: TestServer;
let browser: Browser;
let app: RedirectTarget;

beforeAll(async () => {
  server = await startTestServer();
  try {
    browser = await launchChromium();
    app = await startRedirectTarget();
  } catch (error) {
    await browser?.close();
    await server.stop();
    throw error;
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await server?.stop();
});

describe('a public client', () => {
  test('is registered without a secret in the portal, and signs a person in with openid-client through the browser', async () => {
    // given the operator's owner registering a command-line app with a loopback redirect that names no port
    const page = await signedInPage(browser, server.url, ADMIN);
    await page.goto('/admin/clients');
    await page.getByRole('radio', { name: /^Browser, mobile or command-line app/ }).check();
    await page.getByLabel('Name', { exact: true }).fill('Notes CLI');
    await page.getByLabel('Redirect URIs', { exact: true }).fill('http://127.0.0.1/cb');
    for (const scope of ['email', 'offline_access'])
      await page.getByRole('checkbox', { name: new RegExp(`^${scope} `) }).check();
    await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/admin/clients'),
      page.getByRole('button', { name: 'Register client', exact: true }).click(),
    ]);

    // then the page shows the client ID and no secret, and says why
    const box = page.getByTestId('client-secret-box');
    await box.waitFor();
    const clientId = (await page.getByTestId('shown-client-id').textContent())!.trim();
    expect(clientId).toMatch(/^tsc_/);
    await expect(page.getByTestId('shown-client-secret').count()).resolves.toBe(0);
    await expect(box.textContent()).resolves.toContain('A public client has no secret');
    // and its settings name the kind, with no secret to rotate
    await page.getByRole('link', { name: "Open the client's settings" }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/admin/clients/'));
    await expect(page.getByTestId('client-kind').textContent()).resolves.toContain('Public');
    await expect(page.getByRole('button', { name: 'Rotate secret' }).count()).resolves.toBe(0);

    // when openid-client, as that public client, starts a sign-in back to its own loopback port
    const rp = await oidc.discovery(new URL(server.url), clientId, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(rp, {
      redirect_uri: app.redirectUri,
      scope: 'openid email offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    expect(new URL(app.redirectUri).port).not.toBe('');
    await page.goto(url.href);
    await page.waitForURL((u) => u.pathname === '/consent');
    await page.getByRole('button', { name: 'Allow' }).click();
    const query = await backAtApp(page, app);

    // then it exchanges the code by its client ID alone, and gets an ID token it validates and a refresh token
    const tokens = await oidc.authorizationCodeGrant(rp, new URL(`${app.redirectUri}?${query}`), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.claims()).toMatchObject({ aud: clientId, email: ADMIN.email });
    expect(tokens.refresh_token).toMatch(/^tsr_/);

    // and a refresh rotates it, while the replayed first one ends the grant and the token that replaced it
    const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
    const replay = await oidc.refreshTokenGrant(rp, tokens.refresh_token!).catch((e: unknown) => e);
    expect(replay).toBeInstanceOf(oidc.ResponseBodyError);
    expect((replay as oidc.ResponseBodyError).error).toBe('invalid_grant');
    const after = await oidc.refreshTokenGrant(rp, refreshed.refresh_token!).catch((e: unknown) => e);
    expect((after as oidc.ResponseBodyError).error).toBe('invalid_grant');
    const userinfo = await fetch(`${server.url}/oauth/userinfo`, {
      headers: { authorization: `Bearer ${refreshed.access_token}` },
    });
    expect(userinfo.status).toBe(401);
    await page.context().close();
  });
});
