// Headless Debian Chromium for the portal's browser tests, a sign-in on the portal's form, and a tiny
// OAuth application: a registered client plus a local HTTP server standing in for its redirect URI.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { expect, onTestFailed } from 'vitest';
import { signIn as apiSignIn } from './http.ts';
import { registerClient, type RegisteredClient } from './oauth.ts';
import { ADMIN, recentServerLog, startTestServer, type TestServer } from './server.ts';

/** `extraArgs`: more Chromium flags (a host mapping, a pinned test certificate). */
export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}

/**
 * How long a page action or wait may take. The whole suite runs files in parallel with a Chromium each on two
 * cores, and a page's first interaction waits for its scripts: 10 s ran out there once or twice a run.
 */
export const BROWSER_WAIT_MS = 20_000;

/** A page in a fresh browser context: no cookies from other tests. `options`: a viewport, say. */
export async function freshPage(browser: Browser, baseURL: string, options: BrowserContextOptions = {}): Promise<Page> {
  const context = await browser.newContext({ ...options, baseURL });
  context.setDefaultTimeout(BROWSER_WAIT_MS);
  const page = await context.newPage();
  reportOnFailure(page);
  waitForScriptsOnGoto(page, baseURL);
  return page;
}

/**
 * Makes `page.goto` to a portal page return once the page's scripts run (the root layout marks <html
 * data-hydrated>): on a busy machine a test that typed into a text area before that saw it reset (a text area takes
 * its value, not a default, when the page takes over). A test that asks for its own `waitUntil` (one that acts
 * before the scripts on purpose) gets the page as soon as that is reached.
 */
function waitForScriptsOnGoto(page: Page, baseURL: string): void {
  const goto = page.goto.bind(page);
  page.goto = async (url, options) => {
    const response = await goto(url, options);
    if (
      options?.waitUntil === undefined &&
      new URL(page.url()).origin === new URL(baseURL).origin &&
      response?.headers()['content-type']?.startsWith('text/html')
    ) {
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
    }
    return response;
  };
}

/**
 * Keeps what the page went through (navigations, script errors, failed or refused requests, console warnings) and
 * prints it, with where the page ended and the service's last requests, when the test using it fails: a wait that
 * ran out then says what the browser and the service saw. Outside a test (a beforeAll) there is no test to report on.
 */
function reportOnFailure(page: Page): void {
  const seen: string[] = [];
  const note = (line: string) => seen.push(`${new Date().toISOString().slice(11, 23)} ${line}`);
  page.on('framenavigated', (frame) => frame === page.mainFrame() && note(`at ${frame.url()}`));
  page.on('pageerror', (error) => note(`script error: ${error.stack ?? error.message}`));
  page.on(
    'console',
    (message) => ['error', 'warning'].includes(message.type()) && note(`console.${message.type()}: ${message.text()}`),
  );
  page.on('requestfailed', (request) =>
    note(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText}`),
  );
  page.on(
    'response',
    (response) =>
      response.status() >= 400 && note(`${response.status()} ${response.request().method()} ${response.url()}`),
  );
  try {
    onTestFailed(async () => {
      const main = page.isClosed()
        ? '(closed)'
        : await page
            .locator('main')
            .innerText({ timeout: 2_000 })
            .catch((e: Error) => `(unreadable: ${e.message})`);
      const requests = recentServerLog.filter((line) => line.includes('"msg":"request"')).slice(-60);
      console.error(
        `The browser page, last at ${page.url()}:\n${seen.join('\n')}\n<main> reads: ${main.slice(0, 800)}\nThe service's last requests:\n${requests.join('\n')}`,
      );
    });
  } catch {
    // Called from a hook: nothing to attach the report to.
  }
}

/**
 * Signs in on the portal's sign-in page, open in `page`: the e-mail address first (unless the page already asks for
 * this address's password, as after a login_hint), then the password.
 */
export async function signInOnPage(page: Page, email: string, password: string): Promise<void> {
  await continueWithEmail(page, email);
  await page.getByLabel('Password').fill(password);
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/login'),
    page.getByRole('button', { name: 'Sign in', exact: true }).click(),
  ]);
  // A 403 here is SvelteKit's CSRF check: the portal must see the same origin as the browser.
  if (response.status() === 403) expect.fail(`POST /login answered 403: ${await response.text()}`);
}

/**
 * The sign-in page's first step: types `email` and continues, and waits for the password step. A page already at the
 * password step of another address goes back to change it first.
 */
export async function continueWithEmail(page: Page, email: string): Promise<void> {
  const field = page.getByLabel('Email');
  await field.waitFor();
  if (await page.getByLabel('Password').count()) {
    if ((await field.inputValue()) === email) return;
    await Promise.all([
      page.waitForURL((url) => url.searchParams.get('change') === '1'),
      page.getByRole('link', { name: /^Change/ }).click(),
    ]);
  }
  await field.fill(email);
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/login'),
    page.getByRole('button', { name: 'Continue', exact: true }).click(),
  ]);
  if (response.status() === 403) expect.fail(`POST /login answered 403: ${await response.text()}`);
  await page.getByLabel('Password').waitFor();
}

/**
 * A fresh page signed in as `person` through the portal's form, on the dashboard where sign-in lands: the admin
 * dashboard for owners and admins, the portal's for members.
 */
export async function signedInPage(
  browser: Browser,
  baseURL: string,
  person: { email: string; password: string },
  options: BrowserContextOptions = {},
): Promise<Page> {
  const page = await freshPage(browser, baseURL, options);
  await page.goto('/login');
  await signInOnPage(page, person.email, person.password);
  await page.waitForURL((url) => url.pathname === '/admin/dashboard' || url.pathname === '/portal/dashboard');
  return page;
}

/** The application's side of the redirect: records each query it receives and answers 200. */
export interface RedirectTarget {
  redirectUri: string;
  origin: string;
  received: URLSearchParams[];
  close(): Promise<void>;
}

export async function startRedirectTarget(): Promise<RedirectTarget> {
  const received: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/cb') received.push(url.searchParams);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('Back at the application');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    redirectUri: `${origin}/cb`,
    origin,
    received,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/** Waits until the browser is back at the application and returns the query it brought. */
export async function backAtApp(page: Page, app: RedirectTarget): Promise<URLSearchParams> {
  await page.waitForURL((url) => url.origin === app.origin && url.pathname === '/cb');
  return new URL(page.url()).searchParams;
}

/** What the tests of the OAuth pages (consent, connected apps) run against. */
export interface ApplicationSetup {
  server: TestServer;
  browser: Browser;
  /** The application's side of the redirect. */
  app: RedirectTarget;
  /** The application's registration; its one redirect URI is `app`'s. */
  client: RegisteredClient;
  /** Closes the browser, the redirect target and the service. */
  close(): Promise<void>;
}

/**
 * Starts the service, Chromium and the application's redirect target, and registers the application as the platform
 * admin, so in the operator organization, for openid, email and profile. When a step fails, what was started is
 * closed before the error goes on: the test file's afterAll has nothing to close then.
 */
export async function startApplicationSetup(application: {
  name: string;
  description: string;
}): Promise<ApplicationSetup> {
  const server = await startTestServer();
  let browser: Browser | undefined;
  let app: RedirectTarget | undefined;
  const close = async () => {
    await browser?.close();
    await app?.close();
    await server.stop();
  };
  try {
    browser = await launchChromium();
    app = await startRedirectTarget();
    const { api } = await apiSignIn(server.url, ADMIN.email, ADMIN.password);
    const client = await registerClient(api, {
      ...application,
      redirect_uris: [app.redirectUri],
      allowed_scopes: ['openid', 'email', 'profile'],
    });
    return { server, browser, app, client, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The authorization endpoint's URL for `client` (path and query, relative to the service), back to its first
 * registered redirect URI.
 */
export function authorizeUrl(client: RegisteredClient, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: client.redirect_uris[0]!,
    response_type: 'code',
    scope: 'openid email',
    state: 's1',
    nonce: 'n1',
    ...extra,
  });
  return `/oauth/authorize?${params}`;
}
